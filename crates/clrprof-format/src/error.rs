//! Errors that make a file unreadable as a trace. Everything after a valid header is
//! read on a best-effort basis and reported as [`Warning`](crate::Warning)s instead.

use thiserror::Error;

/// The file cannot be read as a clrprof trace at all.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FormatError {
    #[error(
        "the trace file is empty (0 bytes): the profiler never wrote to it; check that the \
         agent was loaded (its log says why not) and record again"
    )]
    Empty,

    #[error(
        "not a clrprof trace (magic {found}, expected \"CLRPROF\\0\"): pass a file written by \
         `clrprof record` or the clrprof agent"
    )]
    NotATrace { found: String },

    #[error(
        "the trace header is truncated ({len} of {needed} bytes): the recording stopped before \
         the header was written; record again"
    )]
    HeaderTruncated { len: usize, needed: usize },

    #[error(
        "trace format version {major}.{minor} is not supported (this reader reads versions 1.x and 2.x): \
         open the file with the clrprof release that recorded it"
    )]
    UnsupportedVersion { major: u16, minor: u16 },

    #[error(
        "the trace header declares {len} bytes of JSON metadata, more than the 16 MiB limit: \
         the file is damaged; record again"
    )]
    HeaderJsonTooLarge { len: usize },

    #[error(
        "the trace header's JSON metadata is truncated ({present} of {declared} bytes): the \
         recording stopped before the header was written; record again"
    )]
    HeaderJsonTruncated { declared: usize, present: usize },

    #[error(
        "the trace header's JSON metadata is invalid ({error}): the file is damaged or was not \
         written by clrprof; record again"
    )]
    HeaderJsonInvalid { error: String },
}
