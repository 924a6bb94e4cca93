//! clrprof-agent (placeholder)
