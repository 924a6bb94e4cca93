//! A CIL method body rewriter (ECMA-335 §II.25.4, Partition III), pure and safe: no FFI,
//! every input treated as hostile (malformed IL gives an [`IlError`], never a panic).
//!
//! - [`Body`]: a method body parsed from its bytes (tiny or fat header, the instructions
//!   with labels in place of branch displacements, the exception clauses), edited, and
//!   encoded back ([`Body::encode`]; an unchanged body encodes to the bytes it was read
//!   from, short branches are widened where an edit needs it);
//! - [`opcode`]: the opcode table;
//! - [`stack`]: the evaluation stack depth of a body, for its header's max stack;
//! - [`wrap`]: the probe transformation trace mode installs through ReJIT.
//!
//! See docs/il-rewriter.md.

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

mod body;
pub mod coverage;
mod error;
pub mod opcode;
pub mod sig;
pub mod stack;
pub mod wrap;

pub use body::{Body, Clause, ClauseKind, Header, Instr, Label, Operand};
pub use error::{IlError, IlErrorKind};
pub use opcode::OpCode;
