//! Software prefetch of a matrix's rows: hints that ask the memory system for a row before it
//! is read, and change no value.
//!
//! A DP-SGD batch reads random rows of the training matrix, which are not in cache. On x86-64
//! the rows are asked for into the second-level cache (`prefetcht2`, through [`pulp`]'s safe
//! SSE token): an `f64` row of 100 entries is 13 cache lines, and requests into the first
//! level hold one of its few miss buffers each until the line arrives, so the step's own loads
//! queued behind them. Into the second level, the requests and the arithmetic overlap (an
//! epoch of 50,000 × 100 ran about 30% faster than with the same requests into the first
//! level, medians of four alternated runs); the rows then reach the first level when read.
//! Elsewhere, the `prefetch-index` crate's hint (into the first level) is used.

/// Bytes per cache line, as the hints assume (64 on current x86-64 and ARM cores).
const LINE_BYTES: usize = 64;

/// Asks for rows of a row-major matrix ahead of their use ([`RowPrefetch::lines`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowPrefetch {
    /// The SSE token of the second-level hint; `None` where SSE is absent (then no hint).
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    sse: Option<pulp::core_arch::x86::Sse>,
}

impl RowPrefetch {
    /// The hints this processor has.
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            sse: pulp::core_arch::x86::Sse::try_new(),
        }
    }

    /// Asks for every cache line of `xs`, without waiting for them.
    #[inline(always)]
    pub(crate) fn all<T>(self, xs: &[T]) {
        self.lines(xs).upto(xs.len());
    }

    /// The cache lines of `xs`, to be asked for in order as a pass over another slice reaches
    /// the matching entries ([`Lines::upto`]): each line once, one instruction per line.
    #[inline(always)]
    pub(crate) fn lines<T>(self, xs: &[T]) -> Lines<'_, T> {
        let base = xs.as_ptr();
        // The start of the line holding `xs[0]` (a hint's address need not be in `xs`).
        let line = base.wrapping_byte_sub(base.addr() % LINE_BYTES);
        Lines {
            prefetch: self,
            xs,
            line,
        }
    }

    /// Asks for the cache line at `at` (in or just before `xs`, whose lines are asked for).
    #[inline(always)]
    fn line<T>(self, xs: &[T], at: *const T) {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        if let Some(sse) = self.sse {
            #[cfg(target_arch = "x86")]
            use std::arch::x86::_MM_HINT_T2;
            #[cfg(target_arch = "x86_64")]
            use std::arch::x86_64::_MM_HINT_T2;
            sse._mm_prefetch::<_MM_HINT_T2>(at.cast());
        }
        #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
        {
            // The entry of `xs` on that line (the first one for the line just before `xs`).
            let j = at.addr().saturating_sub(xs.as_ptr().addr()) / size_of::<T>().max(1);
            prefetch_index::prefetch_index(xs, j.min(xs.len().saturating_sub(1)));
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        let _ = xs;
    }
}

/// The cache lines of a slice not yet asked for ([`RowPrefetch::lines`]).
#[derive(Debug)]
pub(crate) struct Lines<'a, T> {
    prefetch: RowPrefetch,
    xs: &'a [T],
    /// The start of the first line not yet asked for.
    line: *const T,
}

impl<T> Lines<'_, T> {
    /// Asks for the lines of the entries before `end` (at most the slice's length) that were
    /// not asked for yet.
    #[inline(always)]
    pub(crate) fn upto(&mut self, end: usize) {
        let end = self.xs.as_ptr().wrapping_add(end.min(self.xs.len()));
        while self.line < end {
            self.prefetch.line(self.xs, self.line);
            self.line = self.line.wrapping_byte_add(LINE_BYTES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After `upto(e)` the cursor is at the first line start at or after the end of entry
    /// `e − 1`: the lines of the entries before `e` were asked for (each once, in order), and
    /// none after them; for every alignment of the slice, every length, in steps of any size.
    #[test]
    fn lines_are_asked_in_order_each_once() {
        let data = vec![0.0f64; 300];
        for offset in 0..8 {
            for len in [1, 7, 8, 9, 100, 101, 250] {
                let xs = &data[offset..offset + len];
                for step in [1, 3, 8, 16, 64] {
                    let mut lines = RowPrefetch::new().lines(xs);
                    let first = lines.line.addr();
                    assert_eq!(first % LINE_BYTES, 0);
                    assert!(first <= xs.as_ptr().addr() && xs.as_ptr().addr() - first < LINE_BYTES);
                    let mut asked = first;
                    for e in (step..len + step).step_by(step) {
                        lines.upto(e);
                        let end = xs.as_ptr().addr() + e.min(len) * size_of::<f64>();
                        let at = lines.line.addr();
                        assert_eq!(at % LINE_BYTES, 0, "offset {offset}, len {len}");
                        assert!(at >= end && at < end + LINE_BYTES, "offset {offset}, e {e}");
                        assert!(at >= asked, "the cursor went back");
                        asked = at;
                    }
                    // Past the end: nothing more.
                    lines.upto(len + 100);
                    assert_eq!(lines.line.addr(), asked);
                }
            }
        }
    }
}
