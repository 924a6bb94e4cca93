//! The clrprof trace file format.
//!
//! A trace is a header (magic, version, JSON metadata) followed by CRC-checked blocks of
//! records; each block holds the events of one thread. The agent writes it from inside
//! the profiled process with the allocation-free encoders ([`encode`], [`encode_elt`],
//! [`encode_sample_into`]) and [`write_block`]; the CLI reads it with [`TraceReader`],
//! which works on bytes (sans-IO), never panics, and reads past damage with
//! [`Warning`]s, and follows a file still being written with [`IncrementalReader`], which
//! is fed the bytes as they come and yields the same events. The byte layout is
//! documented in `docs/trace-format.md`.
//!
//! ```
//! use clrprof_format::*;
//!
//! let mut file = Vec::new();
//! write_file_header(&mut file, &Header::new(TraceMeta::default())).unwrap();
//! // Record timestamps are tick deltas within a thread's stream; the block header holds
//! // the timestamp the first delta starts from.
//! let base_ts = 1_000;
//! let mut records = Vec::new();
//! encode(&mut records, 5, &Event::ThreadCreated { thread: 7 }); // at 1_005
//! encode(&mut records, 20, &Event::ThreadDestroyed { thread: 7 }); // at 1_025
//! write_block(&mut file, 0, 42, base_ts, count_records(&records), &records, true).unwrap();
//!
//! let (_header, events, warnings) = read_all(&file).unwrap();
//! assert_eq!(events[1].event, Event::ThreadDestroyed { thread: 7 });
//! assert_eq!((events[1].os_tid, events[1].ts), (42, 1_025));
//! assert!(warnings.is_empty());
//! ```

#![forbid(unsafe_code)]

mod block;
mod block_writer;
mod checked;
mod clock;
pub mod compact;
mod crc_range;
mod decoded;
mod encode;
mod error;
mod events;
mod fields;
mod header;
pub mod leb128;
mod phases;
mod reader;
mod records;
mod scan;
pub mod units;
pub mod values;
mod warning;

pub use block::{
    BLOCK_HEADER_LEN, BLOCK_HEADER_LEN_V1, BLOCK_MAGIC, BLOCK_MAGIC_V1, BlockHeader, FLAG_COMPACT,
    FLAG_LZ4, FLAG_UNITS, KNOWN_FLAGS, MAX_BLOCK_PAYLOAD, MAX_LZ4_RATIO, MAX_LZ4_RATIO_WRITTEN,
};
pub use block_writer::{
    BlockStart, BlockWriter, write_block, write_block_with_scratch, write_compact_block,
    write_units_block,
};
pub use checked::CheckedBlocks;
pub use clock::ClockConverter;
pub use decoded::{DecodedCall, DecodedEvent};
pub use encode::{
    CALL_VALUES_HEADER_MAX, CALL_VALUES_KINDS, ELT_RECORD_MAX, U64_LIST_HEADER_MAX, count_records,
    count_records_with_ts, encode, encode_call_values_header, encode_elt, encode_sample_into,
    encode_u64_list_header, rebase_ts,
};
pub use error::FormatError;
pub use events::{
    ALLOC_SOURCE_SAMPLED, ALLOC_SOURCE_TICK, Event, LOST_BUFFER_FULL, LOST_MAX_SIZE, LOST_STOPPING,
    LOST_WRITE_FAILED, WAIT_HANDLE, WAIT_LOCK, event_kind_table, kind_name,
};
pub use fields::{MAX_LIST_ITEMS, MAX_STRING_BYTES};
pub use header::{
    ClockInfo, ClockKind, EventKindDesc, FILE_HEADER_FIXED_LEN, FILE_HEADER_FIXED_LEN_V1,
    FILE_MAGIC, FORMAT_1_LAST_MINOR, FORMAT_MAJOR, FORMAT_MINOR, FieldDesc, Header,
    MAX_HEADER_JSON_LEN, TraceMeta, write_file_header,
};
pub use phases::{EltKind, ExceptionPhase, HeapReason, SuspendPhase};
pub use reader::{
    Block, Blocks, Events, IncrementalReader, READ_THREADS_ENV, ReadStats, SEEN_WINDOW, SplitSink,
    TraceReader, decode_ahead, read_all, read_workers,
};
pub use records::{Record, RecordError, Records};
pub use warning::{DamageCause, Warning};

/// Set in a `Sample` frame id that stands for a native module (a run of frames in, say,
/// `libcoreclr.so`), named by a `FunctionInfo` record under that id. FunctionIDs are
/// user-space pointers and never have it; frame id 0 is native code of unknown module.
pub const NATIVE_MODULE_FRAME: u64 = 1 << 63;

/// The root-most frame of a stack cut at the depth limit (a native-module-style id,
/// named by a `FunctionInfo` record like `[truncated: deeper than 512 frames]`).
pub const TRUNCATED_FRAME: u64 = u64::MAX;

/// Where a frame was in its method, as a `SamplePositions` item: its IL offset or one of
/// the runtime's special offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IlPosition {
    /// An IL offset.
    Il(u32),
    /// Native code with no IL behind it (`NO_MAPPING`, −1).
    NoMapping,
    /// The method's prolog (−2).
    Prolog,
    /// An epilog (−3).
    Epilog,
}

/// The `SamplePositions` item of a position (`None`: unknown, or not managed code).
pub fn position_item(p: Option<IlPosition>) -> u64 {
    match p {
        None => 0,
        Some(IlPosition::Epilog) => 1,
        Some(IlPosition::Prolog) => 2,
        Some(IlPosition::NoMapping) => 3,
        Some(IlPosition::Il(n)) => u64::from(n) + 4,
    }
}

/// The position a `SamplePositions` item stands for (`None` for 0 and for items that
/// fit no IL offset).
pub fn position_il(item: u64) -> Option<IlPosition> {
    match item {
        0 => None,
        1 => Some(IlPosition::Epilog),
        2 => Some(IlPosition::Prolog),
        3 => Some(IlPosition::NoMapping),
        n => u32::try_from(n - 4).ok().map(IlPosition::Il),
    }
}

/// The position of the runtime's `ilOffset` (−1, −2 and −3 are the special ones; other
/// negative values are unknown).
pub fn position_of_il_offset(il_offset: i32) -> Option<IlPosition> {
    match il_offset {
        -1 => Some(IlPosition::NoMapping),
        -2 => Some(IlPosition::Prolog),
        -3 => Some(IlPosition::Epilog),
        n => u32::try_from(n).ok().map(IlPosition::Il),
    }
}

/// Whether a `Sample` frame id is native code (a module's or unknown), not a function.
pub fn is_native_frame(id: u64) -> bool {
    id == 0 || id & NATIVE_MODULE_FRAME != 0
}
