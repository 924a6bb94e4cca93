//! clrprof-ipc (placeholder)
