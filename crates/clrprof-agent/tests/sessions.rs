//! Sessions one after another in one loaded library, as every attach after the first
//! makes them: only one starts at a time, and a thread that recorded in an earlier
//! session (a runtime thread outlives any session) never follows its old slot pointer,
//! whose slot that session's end freed: it registers afresh. This runs in its own
//! process: it drives the agent's process-wide session state and buffers.

use clrprof_format::Event;
use clrprof_profiler::for_tests::{buffers, session_state};

/// One session's recording on this thread: the registrations it made.
fn record_one_event() -> usize {
    assert!(buffers::init(64 * 1024, true, || {}));
    buffers::set_accepting(true);
    buffers::emit(&Event::Shutdown {});
    buffers::emit(&Event::Shutdown {});
    buffers::set_accepting(false);
    buffers::take_registrations().len()
}

#[test]
fn each_session_starts_afresh_and_one_at_a_time() {
    let first = session_state::begin().expect("the first session starts");
    assert!(
        session_state::begin().is_err(),
        "a second start while a session runs is refused"
    );
    assert_eq!(record_one_event(), 1, "the thread registers its slot once");
    // ProfilerDetachSucceeded: the session's slots are freed.
    session_state::end();

    let second = session_state::begin().expect("the next session starts after the end");
    assert!(second > first && session_state::generation() == second);
    assert_eq!(
        record_one_event(),
        1,
        "the thread's slot pointer of the first session was followed instead of a new slot"
    );
    session_state::end();

    // And again: nothing of the two before is left to trip on.
    session_state::begin().expect("a third session");
    assert_eq!(record_one_event(), 1);
    session_state::end();
}
