//! Why a body could not be read, changed or written.

/// An error of the rewriter: what went wrong and, when it is about the input bytes, at
/// which byte of the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IlError {
    /// The byte of the body (from its first header byte) where reading stopped, if any.
    pub at: Option<usize>,
    pub what: IlErrorKind,
}

/// The kinds of [`IlError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IlErrorKind {
    /// The bytes end before what the header or an instruction says follows.
    Truncated(&'static str),
    /// Bytes that are not a valid body (an unknown opcode, a branch into the middle of
    /// an instruction, a bad header or section).
    Malformed(&'static str),
    /// Valid, but a form this crate does not handle (named).
    Unsupported(&'static str),
    /// An edit that cannot be encoded (a label no instruction has, a body too large).
    Invalid(&'static str),
}

impl IlError {
    pub(crate) fn truncated(at: usize, what: &'static str) -> IlError {
        IlError {
            at: Some(at),
            what: IlErrorKind::Truncated(what),
        }
    }
    pub(crate) fn malformed(at: usize, what: &'static str) -> IlError {
        IlError {
            at: Some(at),
            what: IlErrorKind::Malformed(what),
        }
    }
    pub(crate) fn unsupported(what: &'static str) -> IlError {
        IlError {
            at: None,
            what: IlErrorKind::Unsupported(what),
        }
    }
    pub(crate) fn invalid(what: &'static str) -> IlError {
        IlError {
            at: None,
            what: IlErrorKind::Invalid(what),
        }
    }
}

impl core::fmt::Display for IlError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.what {
            IlErrorKind::Truncated(w) => write!(f, "IL body truncated: {w}")?,
            IlErrorKind::Malformed(w) => write!(f, "malformed IL body: {w}")?,
            IlErrorKind::Unsupported(w) => write!(f, "IL body not handled: {w}")?,
            IlErrorKind::Invalid(w) => write!(f, "IL edit cannot be encoded: {w}")?,
        }
        if let Some(at) = self.at {
            write!(f, " (at byte {at})")?;
        }
        Ok(())
    }
}

impl std::error::Error for IlError {}

impl IlError {
    pub(crate) fn unsupported_at(at: usize, what: &'static str) -> IlError {
        IlError {
            at: Some(at),
            what: IlErrorKind::Unsupported(what),
        }
    }
}
