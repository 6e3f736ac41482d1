//! Push: the feed's entries sent to those who asked for them, as they are published, in one
//! room (the way Svix's server separates its worker, its queue and its API):
//! - `queue`: the delivery queue in the store (enqueue, claim, record, prune);
//! - `dispatch`: the process's webhook sender, the worker that drains the queue;
//! - `guard` and `sign`: where a webhook may be sent, and how each message is signed;
//! - `formats`: Slack and Discord messages rendered from the same entries, and what those
//!   services answer;
//! - `hub`: the process's one reader of new feed entries, fanned out to its event streams
//!   (`GET /v2/stream`);
//! - `commands`: the operator's `govdata webhooks`.
//!
//! The subscriptions themselves (create, list, change, delete) are stored by `store::webhooks`;
//! the HTTP surface (`/v2/webhooks`, `/v2/stream`) is `api`'s, and the edge holds the hub for its
//! handlers (`edge::AppState`). Push imports neither: data flows `store` → `push` → `edge`/`api`.
pub mod commands;
pub mod dispatch;
pub mod formats;
pub mod guard;
pub mod hub;
pub mod queue;
pub mod sign;
