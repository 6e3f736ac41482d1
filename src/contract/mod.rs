//! The public contract, declared once: error codes and problem bodies, envelopes, limits,
//! tiers, scopes and prices, the operation table, the paths that are not operations, parameter
//! types, and the published documents.
//! Routing, validation, the documents, `/v1/meta/pricing` and the access gate all read from here.
pub mod access;
pub mod api_error;
pub mod body;
pub mod counting;
pub mod cursor;
pub mod cursor_shape;
pub mod dataset;
pub mod decimal;
pub mod document;
pub mod envelope;
pub mod errors;
pub mod events;
pub mod exports;
pub mod feed;
pub mod ids;
pub mod limits;
pub mod llms;
pub mod mcp;
pub mod openapi31;
pub mod operations;
pub mod params;
pub mod paths;
pub mod signals;
pub mod time;
pub mod urls;
pub mod vocabulary;
pub mod voting;
pub mod webhooks;
pub mod x402;
pub mod yaml;
