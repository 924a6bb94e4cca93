//! The compact blocks a pass over a trace checked: a leaf that the reader (which fills
//! the list) and the scanner (which trusts it) share.

/// Compact blocks whose structure a pass checked (`compact::validate`, a walk over every
/// word before the block's first event is handed out): their file offsets, record
/// counts and threads, in file order; 24 bytes per block, shared by its clones (the
/// workers of a pass and their scanners hold one list). See
/// [`TraceReader::checked_blocks`](crate::TraceReader::checked_blocks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckedBlocks(pub(crate) std::sync::Arc<Vec<(u64, u32, u64)>>);

impl CheckedBlocks {
    pub(crate) fn count_at(&self, offset: u64) -> Option<u32> {
        let i = self.0.binary_search_by_key(&offset, |b| b.0).ok()?;
        Some(self.0[i].1)
    }

    /// Records of the checked blocks per OS thread (trace mode's calls are most of
    /// them), by thread id: how a pass can share the threads out among workers.
    pub fn records_by_thread(&self) -> Vec<(u64, u64)> {
        let mut per: std::collections::BTreeMap<u64, u64> = Default::default();
        for &(_, count, os_tid) in self.0.iter() {
            *per.entry(os_tid).or_default() += u64::from(count);
        }
        per.into_iter().collect()
    }
}
