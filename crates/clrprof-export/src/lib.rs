//! clrprof-export (placeholder)
