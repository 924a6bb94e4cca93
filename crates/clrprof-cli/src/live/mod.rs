//! What `top` and `dump` share: the live target (attach or launch, then detach), following
//! its trace file while the agent writes it, and the kernel's view of its threads.

pub mod follow;
pub mod target;
pub mod tasks;
