//! The wasm's allocator: the standard one (dlmalloc), made to grow the memory in large steps,
//! and to remember an allocation that failed (for the error the recovery reports).
//!
//! dlmalloc grows the wasm memory by what the allocation at hand needs, in 64 KB pages; the
//! host pays for every `memory.grow` (V8 runs a full garbage collection of the JS heap), so a
//! first build in a page or server with a large heap spent most of its time in collections
//! (24.9 s instead of 2.1 s with 153 MB of live JS objects). When an allocation has
//! made the memory grow, a block of a quarter of the memory is allocated and freed at once:
//! one grow, and the allocator keeps the block (wasm memory never shrinks) for what comes next,
//! so the memory grows geometrically, in a few dozen steps up to its 4 GB.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The size of the last allocation that failed, until the recovery reads it (0: none).
static FAILED: AtomicUsize = AtomicUsize::new(0);

/// The size of the allocation that failed since the last call (0 if none).
pub(crate) fn take_failed_allocation() -> usize {
    FAILED.swap(0, Ordering::Relaxed)
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::arch::wasm32::memory_size;
    use std::sync::atomic::Ordering;

    const PAGE: usize = 64 * 1024;
    /// The least the memory grows by, and the share of it that it grows by at least.
    const MIN_STEP: usize = 4 << 20;
    const STEP_SHARE: usize = 4;
    /// The most it grows by ahead of need: past 128 MB a quarter of the memory would leave up to
    /// that much unused for good (wasm memory never shrinks), while a step of 32 MB already
    /// amortises the host's collection over thousands of allocations; past 256 MB, 16 MB, a
    /// sixteenth or less. (With 32 MB throughout, the first build of 300,000 tau-bench messages
    /// ended at 352 or 372 MB, 2.0x or 2.1x their JSON, by where its peak fell on the steps; a 16
    /// MB cap from 64 MB made the first build at 100,000 with a 300 MB JS heap 1.6x the idle one,
    /// one collection a step.)
    const MAX_STEP: usize = 32 << 20;
    const LATE_MAX_STEP: usize = 16 << 20;
    const LATE: usize = 256 << 20;

    pub struct GrowInLargeSteps;

    #[global_allocator]
    static ALLOCATOR: GrowInLargeSteps = GrowInLargeSteps;

    /// After an allocation (`ptr`, of `size` bytes) made while the memory had `pages` pages.
    #[inline]
    fn after(pages: usize, ptr: *mut u8, size: usize) -> *mut u8 {
        if ptr.is_null() {
            super::FAILED.store(size.max(1), Ordering::Relaxed);
        } else if memory_size(0) != pages {
            reserve_ahead();
        }
        ptr
    }

    /// Grows the memory by a share of its size in one step, through the allocator so that it
    /// keeps the block; a smaller one when that much cannot be had.
    #[cold]
    #[inline(never)]
    fn reserve_ahead() {
        let size = memory_size(0) * PAGE;
        let mut step = (size / STEP_SHARE).clamp(MIN_STEP, if size >= LATE { LATE_MAX_STEP } else { MAX_STEP });
        while step >= MIN_STEP {
            let Ok(layout) = Layout::from_size_align(step, 16) else { return };
            // SAFETY: a layout of non-zero size; the block is freed with the same layout.
            unsafe {
                let block = System.alloc(layout);
                if !block.is_null() {
                    System.dealloc(block, layout);
                    return;
                }
            }
            step /= 2;
        }
    }

    // SAFETY: every call goes to `System`, with the same arguments.
    unsafe impl GlobalAlloc for GrowInLargeSteps {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let pages = memory_size(0);
            after(pages, System.alloc(layout), layout.size())
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let pages = memory_size(0);
            after(pages, System.alloc_zeroed(layout), layout.size())
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            System.dealloc(ptr, layout)
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let pages = memory_size(0);
            after(pages, System.realloc(ptr, layout, new_size), new_size)
        }
    }
}
