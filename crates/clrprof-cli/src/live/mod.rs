//! What `top` and `dump` share: the live target (attach or launch, then detach), following
//! its trace file while the agent writes it, the kernel's view of its threads, and what a
//! stack waits in.

pub mod follow;
pub mod target;
pub mod tasks;
pub mod waits;
