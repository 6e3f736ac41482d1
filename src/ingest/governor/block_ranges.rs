//! Walking a span of blocks in ranges a node accepts for `eth_getLogs`.
/// Blocks `from..=to` walked in ranges of at most `range` blocks, the range halved whenever a
/// node refuses one for its size (`refused_range`), down to single blocks.
pub(super) struct BlockRanges {
    start: u64,
    to: u64,
    range: u64,
}

impl BlockRanges {
    pub(super) fn new(from: u64, to: u64, range: u64) -> Self {
        Self { start: from, to, range: range.max(1) }
    }

    /// The next range to read, first and last block, or `None` when every block was read.
    pub(super) fn next(&self) -> Option<(u64, u64)> {
        (self.start <= self.to).then(|| (self.start, (self.start + self.range - 1).min(self.to)))
    }

    /// The range ending at `end` was read.
    pub(super) fn read(&mut self, end: u64) {
        self.start = end + 1;
    }

    /// Reading the next range failed with `e`: the range is halved when the node refused its
    /// size (the same start is read again); any other failure, or a single block refused, is
    /// the run's.
    pub(super) fn refused(&mut self, e: anyhow::Error) -> anyhow::Result<()> {
        if self.range > 1 && refused_range(&e) {
            self.range = (self.range / 2).max(1);
            tracing::debug!(start = self.start, range = self.range, "the node refused the block range; halving it");
            return Ok(());
        }
        Err(e)
    }
}

/// Whether a node refused `eth_getLogs` for the size of the range or of its answer.
fn refused_range(e: &anyhow::Error) -> bool {
    let text = format!("{e:#}").to_ascii_lowercase();
    ["range", "limit", "too many", "exceed", "-32005", "response size"].iter().any(|w| text.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ranges_halve_on_a_refused_size_and_cover_every_block_once() {
        let mut ranges = BlockRanges::new(10, 29, 8);
        assert_eq!(ranges.next(), Some((10, 17)));
        ranges.refused(anyhow::anyhow!("query returned more than 10000 results; limit exceeded")).unwrap();
        assert_eq!(ranges.next(), Some((10, 13)), "the same start, half the range");
        ranges.read(13);
        assert_eq!(ranges.next(), Some((14, 17)));
        assert!(ranges.refused(anyhow::anyhow!("connection reset")).is_err(), "not a size refusal");
        ranges.read(17);
        ranges.read(21);
        ranges.read(25);
        assert_eq!(ranges.next(), Some((26, 29)));
        ranges.read(29);
        assert_eq!(ranges.next(), None);
        let mut one = BlockRanges::new(5, 5, 1);
        assert!(one.refused(anyhow::anyhow!("block range too large")).is_err(), "a single block refused fails");
    }
}
