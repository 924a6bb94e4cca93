//! How an attached profiler is controlled from outside: `attach` reads the settings the
//! CLI sent with AttachProfiler, `socket` serves the control socket (status, heap,
//! detach) and leaves a refused attach's reason for the CLI, `watch` decides when the
//! agent detaches on its own (the duration is over, the CLI is gone).

pub(crate) mod attach;
mod socket;
mod watch;

pub(crate) use socket::{
    ControlServer, Controlled, Restarted, write_detached_note, write_dormant_note, write_error_note,
};
pub(crate) use watch::{Owner, Watch};
