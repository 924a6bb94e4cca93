//! Support for clrprof's acceptance tests: finds the workspace and the .NET SDK, builds the
//! test apps under `apps/` (once per source change, shared by concurrently running test
//! binaries) and reads the `RESULT key=value` lines those apps print about themselves.
//!
//! ```no_run
//! let app = clrprof_testkit::app("Scenarios");
//! let out = app.command(&["fib", "25"]).output().unwrap();
//! let results = clrprof_testkit::parse_results(&String::from_utf8_lossy(&out.stdout));
//! assert_eq!(results["fib_calls"], "242785");
//! ```

mod agent;
mod apps;
pub mod module_graph;
mod paths;
mod procmem;
mod results;
mod runtimes;
mod snapshot_json;
mod source_hash;

pub use agent::{LIBRARY, profiler_library};
pub use apps::{
    BuiltApp, app, app_composite, app_embedded_pdb, app_embedded_pdb_on, app_on, app_single_file,
};
pub use paths::{dotnet, target_dir, workspace_root};
pub use procmem::{malloc_arenas, rss_outside_agent};
pub use results::parse_results;
pub use runtimes::Runtime;
pub use snapshot_json::snapshot_json;
