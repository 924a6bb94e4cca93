//! Analysis of a clrprof trace, out of process. [`Trace::load`] decodes and orders the
//! events on one timeline; [`report::build`] turns them into the [`report::Report`] that
//! `clrprof report` prints as text or JSON (schema: docs/report-json.md).

#![forbid(unsafe_code)]

pub mod calltree;
pub mod gc;
pub mod names;
pub mod profile;
pub mod report;
pub mod samples;
pub mod text;
pub mod threads;
pub mod timeline;

pub use report::{Options, Report, build, build_with};
pub use timeline::{TimedEvent, Trace};
