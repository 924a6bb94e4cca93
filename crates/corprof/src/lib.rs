//! corprof (placeholder)
