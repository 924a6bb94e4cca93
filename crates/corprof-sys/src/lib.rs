//! corprof-sys (placeholder)
