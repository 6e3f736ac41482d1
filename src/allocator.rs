//! The process's allocator, and what it is asked beyond allocating.
//!
//! Every binary of the crate (the server, `bench`, `soak`) and every test binary allocates with
//! mimalloc: declared here, once, so that what the benchmarks time is what `govdata serve` runs.
//! The crate's own unit tests count allocations through mimalloc instead (`edge::cache`).
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands the memory freed so far back to the kernel, now.
///
/// mimalloc returns a freed page to the kernel a second after it was freed (its `purge_delay`),
/// and only when the process allocates or frees again: what start-up used and freed (the bundled
/// sample's import, the documents built and rendered, the migrations) stayed resident in a server
/// that then waited for requests, 109-150 MB of RSS instead of 102-109 (`govdata serve` on a new
/// SQLite store, three starts each, 2026-11-29). Under load the resident set is the same either
/// way (104-115 MB). Purging at once on every free (`purge_delay` 0) cost the cached path 5-10 %
/// of its requests per second; this is one call after start-up, not a cost per request.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointer; it may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
