//! clrprof-format (placeholder)
