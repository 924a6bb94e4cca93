//! Frame-pointer stack walks for the signal sampler (over a stack copied by its SIGPROF
//! handler).
//!
//! - `fpwalk`: the walk itself, pure: frame records, frameless leaves and gaps, OSR
//!   frames, resumption after a broken link;
//! - `symbolize`: code address → FunctionID and frame kind, with the checks that keep
//!   arbitrary stack words away from the runtime (Linux x86_64);
//! - `r2r`: ReadyToRun images' method tables and method-def entry points, read from our
//!   own memory: which addresses the runtime may be asked about, and the answers the
//!   sampler gives itself (Linux x86_64);
//! - `dyncode`: dynamic methods' code (LCG methods, IL stubs) as the callbacks report it:
//!   the sampler names it from this table and never asks the runtime about it;
//! - `ilmap`: code address → IL offset through each code version's IL → native map (both
//!   samplers, on the sampler thread);
//! - `addrhash`: the hash of the sampler's caches (integer keys, no SipHash).

pub(crate) mod addrhash;
pub(crate) mod dyncode;
pub(crate) mod fpwalk;
pub(crate) mod ilmap;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) mod r2r;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) mod symbolize;
