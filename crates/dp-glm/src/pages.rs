//! Huge pages for the feature matrix: a hint to the kernel, which changes no value.
//!
//! DP-SGD reads random rows. With 4 KiB pages every row of a matrix larger than the caches
//! costs a page-table walk; with 2 MiB pages the TLB holds the whole working set. On Linux,
//! [`prefer_huge_pages`] asks the kernel to back a large matrix by transparent huge pages
//! (`madvise` with `MADV_HUGEPAGE`, so that pages faulted later are huge) and to collapse the
//! pages already there into huge ones now (`MADV_COLLAPSE`, Linux 6.1 and later). Both are
//! advice: where the kernel has no huge pages, refuses, or is older, the call fails and the
//! matrix stays as it is. No value changes either way. Elsewhere it does nothing.

/// Bytes of a huge page (x86-64 and most ARM kernels).
const HUGE: usize = 2 << 20;

/// Asks the kernel to back the whole 2 MiB pages inside `values` by huge pages (module
/// docs); when `values` holds no whole (aligned) 2 MiB page, does nothing. Returns whether
/// the kernel accepted the advice (for tests and diagnostics; the values are the same either
/// way).
pub(crate) fn prefer_huge_pages<T>(values: &[T]) -> bool {
    let (start, len) = (values.as_ptr() as usize, size_of_val(values));
    let first = start.next_multiple_of(HUGE);
    // Both multiples of `HUGE`: any range between them holds whole huge pages.
    let end = (start + len) / HUGE * HUGE;
    if end <= first {
        return false;
    }
    advise(first, end - first)
}

/// `madvise(MADV_HUGEPAGE)`, then `madvise(MADV_COLLAPSE)`, on `[addr, addr + len)`.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn advise(addr: usize, len: usize) -> bool {
    let ptr = addr as *mut libc::c_void;
    // SAFETY: `[addr, addr + len)` is made of whole pages inside a live allocation that the
    // caller borrows (`prefer_huge_pages` rounds inward). Neither advice changes the contents
    // or the mapping of the memory as the program sees it: `MADV_HUGEPAGE` only marks the
    // range as eligible for huge pages, and `MADV_COLLAPSE` copies its pages into huge pages
    // transparently, while other threads may read them (madvise(2)). Failure leaves the range
    // as it was and is reported through the return value only.
    unsafe {
        libc::madvise(ptr, len, libc::MADV_HUGEPAGE) == 0
            && libc::madvise(ptr, len, libc::MADV_COLLAPSE) == 0
    }
}

/// No huge-page advice off Linux.
#[cfg(not(target_os = "linux"))]
fn advise(_: usize, _: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_changes_no_value_and_skips_short_slices() {
        // 8 MiB of distinct values: at least three whole huge pages inside.
        let values: Vec<f64> = (0..1 << 20).map(|i| f64::from(i) * 0.5 - 3.0).collect();
        let before = values.clone();
        // Accepted or refused depending on the kernel; the values are the same either way.
        let _accepted = prefer_huge_pages(&values);
        assert_eq!(values, before);
        // Shorter than a huge page, so holding no whole one: no advice asked.
        assert!(!prefer_huge_pages(&values[..(HUGE / 8 - 1)]));
        assert!(!prefer_huge_pages::<f32>(&[]));
    }
}
