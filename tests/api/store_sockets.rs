//! govdata's TCP connections to PostgreSQL send without delay (`TCP_NODELAY`), as libpq's do.
//!
//! With Nagle's algorithm on, a message larger than one segment (a publication's insert batch is
//! about 100 KB) sends its tail only once the server acknowledges its head, which the server
//! delays by about 40 ms: each large statement of a publication waited that long (issue 31).
//! sqlx 0.9.0 stopped setting the option; `vendor/sqlx-core` sets it again, in `connect_tcp`, which
//! opens every PostgreSQL connection govdata makes (the store's pool, each replica's, the stream's
//! `LISTEN`). The test checks a connection of the pool the server opens (`store::connect`).
use std::os::fd::RawFd;

use govdata::store;
use sea_orm::{ConnectionTrait, DbBackend, Statement};

use crate::helpers::{Backend, fresh_database};

/// The port of the socket `fd`'s local end (`peer`: its remote end), when it is a TCP socket over
/// IPv4 or IPv6.
fn port(fd: RawFd, peer: bool) -> Option<u16> {
    // SAFETY: all zeroes is a valid sockaddr_storage.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `addr` is writable for `len` bytes; an fd that is not a socket answers an error.
    let r = unsafe {
        if peer {
            libc::getpeername(fd, (&raw mut addr).cast(), &mut len)
        } else {
            libc::getsockname(fd, (&raw mut addr).cast(), &mut len)
        }
    };
    if r != 0 {
        return None;
    }
    match i32::from(addr.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let v4 = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in>() };
            Some(u16::from_be(v4.sin_port))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let v6 = unsafe { &*(&raw const addr).cast::<libc::sockaddr_in6>() };
            Some(u16::from_be(v6.sin6_port))
        }
        _ => None,
    }
}

/// `TCP_NODELAY` of the socket `fd`.
fn nodelay(fd: RawFd) -> bool {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&raw mut value).cast(), &mut len) };
    assert_eq!(r, 0, "getsockopt(TCP_NODELAY) on fd {fd}: {}", std::io::Error::last_os_error());
    value != 0
}

/// The open descriptors of this process whose TCP socket joins local port `local` to remote port
/// `remote` (a connection's ports; with the addresses they are unique, and every test connects
/// over loopback).
fn sockets(local: u16, remote: u16) -> Vec<RawFd> {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .filter(|fd| port(*fd, false) == Some(local) && port(*fd, true) == Some(remote))
        .collect()
}

/// Connects to `url` as the server does and checks the socket of the session that answers.
async fn check(url: &str) {
    let db = store::connect(url).await.unwrap();
    // The session's own view of its ports: the socket at our end of this connection.
    let sql = "SELECT inet_client_port() AS client, inet_server_port() AS server";
    let row = db.query_one_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap().expect("one row");
    let [client, server] = ["client", "server"].map(|c| u16::try_from(row.try_get::<i32>("", c).unwrap()).unwrap());
    let fds = sockets(client, server);
    assert_eq!(fds.len(), 1, "one socket of this process from port {client} to {server} ({url}): {fds:?}");
    assert!(nodelay(fds[0]), "the connection to {url} from port {client} delays small segments (TCP_NODELAY off)");
    db.close().await.ok();
}

#[tokio::test]
async fn postgres_connections_send_without_delay() {
    if !crate::helpers::require(Backend::Postgres) {
        return;
    }
    let url = fresh_database(Backend::Postgres).await;
    check(&url).await;
    // The probe reads the option: a socket opened to the same server without setting it (what
    // sqlx 0.9.0 did) has it off.
    let db = store::connect(&url).await.unwrap();
    let sql = "SELECT inet_server_addr()::text AS host, inet_server_port() AS port";
    let row = db.query_one_raw(Statement::from_string(DbBackend::Postgres, sql)).await.unwrap().expect("one row");
    let host = row.try_get::<String>("", "host").unwrap();
    let host = host.split('/').next().unwrap().to_owned();
    let server = u16::try_from(row.try_get::<i32>("", "port").unwrap()).unwrap();
    let plain = tokio::net::TcpStream::connect((host.as_str(), server)).await.unwrap();
    let local = plain.local_addr().unwrap().port();
    assert_eq!(sockets(local, server).len(), 1);
    assert!(!nodelay(sockets(local, server)[0]), "a plain socket has TCP_NODELAY off");
    db.close().await.ok();
}
