//! The embedded store allocates through the process's allocator (`allocator::sqlite_allocator`):
//! SQLite's allocations come from mimalloc, not glibc's `malloc`, so the instruction counts of
//! what reads the store do not depend on glibc's heap history (`scripts/costs`).
use std::ffi::c_int;

use crate::helpers::{Backend, fresh_database};

#[tokio::test]
async fn sqlite_allocates_through_mimalloc() {
    let db = govdata::store::connect(&fresh_database(Backend::Sqlite).await).await.unwrap();
    // Configured before SQLite's first connection in this process: no test opens SQLite another
    // way first, so the configuration took (`SQLITE_MISUSE` had it come too late).
    assert_eq!(govdata::allocator::sqlite_allocator(), libsqlite3_sys::SQLITE_OK);
    // SAFETY: SQLite is initialised (the store is open); the block is freed by SQLite.
    unsafe {
        let block = libsqlite3_sys::sqlite3_malloc(4096 as c_int);
        assert!(!block.is_null());
        assert!(libmimalloc_sys::mi_is_in_heap_region(block), "SQLite's block is mimalloc's");
        libsqlite3_sys::sqlite3_free(block);
    }
    // And the store works through it: the migrations ran, a query reads.
    use sea_orm::ConnectionTrait;
    let row = db
        .query_one_raw(sea_orm::Statement::from_string(db.get_database_backend(), "SELECT COUNT(*) AS n FROM votes"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.try_get::<i64>("", "n").unwrap(), 0);
}
