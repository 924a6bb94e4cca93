//! clrprof-testkit (placeholder)
