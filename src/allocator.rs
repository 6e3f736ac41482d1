//! The process's allocator, and what it is asked beyond allocating.
//!
//! Every binary of the crate (the server, `bench`, `soak`) and every test binary allocates with
//! mimalloc: declared here, once, so that what the benchmarks time is what `govdata serve` runs.
//! The crate's own unit tests count allocations through mimalloc instead (`edge::cache`).
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Asks the kernel for no transparent huge pages in this process (`PR_SET_THP_DISABLE`), as
/// mimalloc's own `allow_thp=0` does; called first thing in `main`.
///
/// mimalloc reserves its arenas with `madvise(MADV_HUGEPAGE)` where the system allows huge pages
/// (`madvise`, as Debian ships, or `always`), and its 64 KiB pages of each thread and size class
/// lie scattered over them, so every 2 MiB region one of them touched became a whole huge page:
/// a loaded server held tens of MiB more resident for it, at the same requests per second
/// (docs/benchmarks.md, "Huge pages", has the figures). The build (`no_thp`) keeps mimalloc
/// from asking for them before `main`; this keeps the kernel from handing them out on a system
/// that does so unasked (`always`).
pub fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) takes no pointer and changes only this
    // process's huge page policy; its result is advisory (an older kernel lacks it).
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// mimalloc's `mi_option_purge_delay` (`mimalloc.h`'s `mi_option_e`, v3), which `libmimalloc-sys`
/// does not name.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps a freed page before it hands it back to the kernel, in milliseconds.
const PURGE_AFTER_MS: std::ffi::c_long = 10;

/// Hands freed pages back to the kernel [`PURGE_AFTER_MS`] after they were freed instead of
/// mimalloc's second; called first thing in `main`, beside [`no_huge_pages`].
///
/// Under load every thread frees pages while others allocate new ones, and a second's worth of
/// them stayed resident. A short delay lowered the loaded server's peak RSS at the same requests
/// per second; a purge on every free (0) cost the cached path requests per second. The runs, with
/// their date and command: docs/benchmarks.md, "Purging freed pages sooner".
pub fn purge_freed_soon() {
    // SAFETY: `mi_option_set` takes no pointer; mimalloc reads the option at each purge.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_AFTER_MS) }
}

/// Hands the memory freed so far back to the kernel, now.
///
/// mimalloc returns a freed page to the kernel a second after it was freed (its `purge_delay`),
/// and only when the process allocates or frees again: what start-up used and freed (the bundled
/// sample's import, the documents built and rendered, the migrations) stayed resident in a server
/// that then waited for requests, 109-150 MB of RSS instead of 102-109 (`govdata serve` on a new
/// SQLite store, three starts each, 2026-11-29). Under load the resident set is the same either
/// way (104-115 MB). Purging at once on every free (`purge_delay` 0) cost the cached path 5-10 %
/// of its requests per second; this is one call after start-up, not a cost per request (and
/// [`purge_freed_soon`] shortens the delay under load).
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointer; it may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// SQLite allocates through mimalloc too, and keeps no memory statistics; called before the
/// process opens its first SQLite connection (`store::connect`), as `sqlite3_config` requires.
///
/// The bundled SQLite otherwise allocates with glibc's `malloc`, whose work depends on the heap's
/// history and on which thread frees: the same request or export counted more or fewer
/// instructions from one run to the next, by more than `scripts/costs` allows
/// (docs/benchmarks.md, "Instruction counts in CI"), so those counts could not be guarded.
/// mimalloc for the whole C side (the `override` feature) made them steady but served slower;
/// this hands SQLite alone to the allocator the process already runs. SQLite's memory statistics (`SQLITE_CONFIG_MEMSTATUS`, on by default in the bundled
/// build) take a global mutex on every allocation and free; nothing here reads them.
///
/// Returns SQLite's result code: `SQLITE_MISUSE` when SQLite was already initialised (an earlier
/// connection), in which case it keeps its allocator.
pub fn sqlite_allocator() -> i32 {
    use libsqlite3_sys as ffi;
    use std::ffi::{c_int, c_void};
    use std::sync::OnceLock;

    // SQLite asks for sizes as `int`, never a negative or zero one (it handles those itself), and
    // hands back only what these returned.
    unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
        unsafe { libmimalloc_sys::mi_malloc(n as usize) }
    }
    unsafe extern "C" fn x_free(p: *mut c_void) {
        unsafe { libmimalloc_sys::mi_free(p) }
    }
    unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        unsafe { libmimalloc_sys::mi_realloc(p, n as usize) }
    }
    unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
        unsafe { libmimalloc_sys::mi_usable_size(p) as c_int }
    }
    unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
        unsafe { libmimalloc_sys::mi_good_size(n as usize) }.min(c_int::MAX as usize) as c_int
    }
    unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }
    unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

    static RESULT: OnceLock<i32> = OnceLock::new();
    *RESULT.get_or_init(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config` is called once (the `OnceLock`), before SQLite's first
        // connection in `store::connect`; SQLite copies `methods` before it returns. The
        // functions keep SQLite's contract: sizes are positive, and what they free or measure is
        // only what they allocated.
        unsafe {
            let memstatus = ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int);
            if memstatus != ffi::SQLITE_OK {
                return memstatus;
            }
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const ffi::sqlite3_mem_methods)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PURGE_DELAY` is mimalloc's purge delay: the one option whose default is 1,000 (ms), and
    /// what [`purge_freed_soon`] sets is what mimalloc then reads.
    #[test]
    fn purge_freed_soon_sets_mimallocs_purge_delay() {
        // SAFETY: `mi_option_get` takes no pointer.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() && std::env::var_os("MIMALLOC_RESET_DELAY").is_none() {
            assert_eq!(get(), 1000, "option {PURGE_DELAY} is not mimalloc's purge delay");
        }
        purge_freed_soon();
        assert_eq!(get(), PURGE_AFTER_MS);
    }
}
