//! Agent settings: the typed contract of `clrprof-settings`, read from `CLRPROF_*`
//! environment variables (startup) or from the attach client data. Parsing is pure (a
//! lookup function in, `Settings` or a message out) and unit-tested there; a bad value
//! declines the load with that message.

pub use clrprof_settings::attach::AttachConflict;
pub use clrprof_settings::{
    ArgLimits, EventGroup, LogTarget, Mode, OnFull, SamplerKind, Settings,
    SettingsError as ConfigError, TraceProbe, check_utf8,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_env(|k| map.get(k).cloned(), 42)
    }

    /// `--args` asks for the runtime's slow path with `CLRPROF_ARGS_FAST=0`; by default the
    /// agent's own hooks read the registers: then none of the flags that force it (which
    /// the runtime would refuse beside fast-path hooks).
    #[test]
    fn args_ask_for_the_elt_slow_path_unless_fast() {
        let (low, _) = crate::session::mask::for_settings(
            &parse(&[("CLRPROF_MODE", "trace"), ("CLRPROF_ARGS", "A.*")]).unwrap(),
        );
        let slow = corprof_sys::COR_PRF_ENABLE_FUNCTION_ARGS
            | corprof_sys::COR_PRF_ENABLE_FUNCTION_RETVAL
            | corprof_sys::COR_PRF_ENABLE_FRAME_INFO;
        if crate::tracing::args::fast_path() {
            assert_eq!(low & slow, 0);
        } else {
            assert_eq!(low & slow, slow);
        }
        assert_ne!(low & corprof_sys::COR_PRF_MONITOR_ENTERLEAVE, 0);
        assert_ne!(low & corprof_sys::COR_PRF_MONITOR_CLASS_LOADS, 0);
    }

    /// `--alloc` asks for EventPipe delivery, the basic GC callbacks and stack snapshots,
    /// never for the full GC monitor or allocation callbacks (which turn background GC
    /// off and slow every allocation), and only for flags allowed after an attach.
    #[test]
    fn alloc_keeps_background_gc_on() {
        let (low, high) = crate::session::mask::for_settings(
            &parse(&[
                ("CLRPROF_EVENTS", "none"),
                ("CLRPROF_ALLOC_INTERVAL", "102400"),
            ])
            .unwrap(),
        );
        let (base_low, base_high) =
            crate::session::mask::for_settings(&parse(&[("CLRPROF_EVENTS", "none")]).unwrap());
        assert_eq!(low & !base_low, corprof_sys::COR_PRF_ENABLE_STACK_SNAPSHOT);
        assert_eq!(
            high & !base_high,
            corprof_sys::COR_PRF_HIGH_MONITOR_EVENT_PIPE | corprof_sys::COR_PRF_HIGH_BASIC_GC
        );
        assert_eq!(low & corprof_sys::COR_PRF_MONITOR_GC, 0);
        assert_eq!(low & corprof_sys::COR_PRF_ENABLE_OBJECT_ALLOCATED, 0);
        assert_eq!(low & !corprof_sys::COR_PRF_ALLOWABLE_AFTER_ATTACH, 0);
        assert_eq!(high & !corprof_sys::COR_PRF_HIGH_ALLOWABLE_AFTER_ATTACH, 0);
    }
}
