//! Pure readers of what a .NET module's files hold, shared by the profiler binding
//! (`corprof`), the agent and the CLI: no `unsafe`, no FFI, every input treated as
//! hostile (a damaged or truncated file gives an error, never a panic).
//!
//! - [`rawmd`]: a module's ECMA-335 metadata tables read from its bytes ([`RawMetadata`]),
//!   and [`rawmd::pe`], which finds them in a PE image;
//! - [`sig`]: signature blobs (method, field, type signatures) and their formatting;
//! - [`MetadataRead`]: what naming asks of a module's metadata, whichever reader answers;
//! - [`pdb`]: portable PDBs (sequence points, documents, state machines), found beside
//!   an image, in its embedded debug directory entry, or in extra folders.
//!
//! `corprof` re-exports the first three under the same paths (`corprof::rawmd`,
//! `corprof::sig`, `corprof::MetadataRead`, `corprof::HResult`).

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

pub mod hresult;
mod mdread;
pub mod pdb;
pub mod props;
pub mod rawmd;
pub mod sig;

pub use hresult::{HResult, Result, check};
pub use mdread::MetadataRead;
pub use props::{FieldProps, MemberRefProps, MethodProps, TypeDefProps, TypeRefProps};
pub use rawmd::{RawError, RawMetadata};
