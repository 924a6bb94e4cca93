//! Analysis of a clrprof trace, out of process. [`Trace::load`] decodes and orders the
//! events on one timeline, except trace mode's call records, which
//! [`Trace::for_each_call`] streams into a [`calltree::Builder`] (memory grows with the
//! call tree, not with the calls); [`report::build`] turns them into the
//! [`report::Report`] that `clrprof report` prints as text or JSON (schema:
//! docs/report-json.md).

#![forbid(unsafe_code)]

pub mod allocs;
pub mod app_code;
pub mod butterfly;
pub mod calltree;
pub mod diff;
pub mod gc;
pub mod heap;
pub mod invocations;
pub mod lines;
pub mod names;
pub mod profile;
pub mod report;
pub mod runtime_frames;
pub mod samples;
pub mod text;
pub mod threads;
pub mod timeline;
pub mod units;
pub mod waits;

pub use report::{Options, Report, build, build_with};
pub use timeline::{StreamSink, TimedCall, TimedEvent, Trace};
