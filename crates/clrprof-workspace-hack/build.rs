//! Empty: it exists so that the `[build-dependencies]` in Cargo.toml take part in
//! feature resolution for the compiler's side (see Cargo.toml).
fn main() {}
