//! No code: this crate only asks for features of dependencies (see its Cargo.toml).
