//! The compile-time gate for trace mode: its ELT trampolines (`src/tracing/x64.rs`) exist
//! for Linux x86_64 only. Elsewhere the crate still builds, because sampling and events
//! work on every target the runtime supports, and the build says what is left out;
//! `--mode trace` then declines to load with a log line (`src/tracing/install.rs`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if (arch.as_str(), os.as_str()) != ("x86_64", "linux") {
        println!(
            "cargo:warning=clrprof-agent for {arch}-{os}: trace mode (ELT3 enter/leave/tailcall \
             trampolines) is implemented for x86_64 Linux only and is left out of this build; \
             --mode trace will decline to load. Sampling and events are built."
        );
    }
}
