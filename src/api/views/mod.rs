//! Response types that more than one operation serves, and their construction from store
//! records. A controller's own types (parameters, a response only it returns) stay in its file;
//! anything two controllers share lives here, so controllers never import each other.
pub mod action;
pub mod activity;
pub mod citation;
pub mod dao;
pub mod delegation;
pub mod event;
pub mod execution;
pub mod feed;
pub mod item;
pub mod proposal;
pub mod signal;
pub mod simulation;
pub mod topic;
pub mod voter;
