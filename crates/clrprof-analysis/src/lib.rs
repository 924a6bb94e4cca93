//! clrprof-analysis (placeholder)
