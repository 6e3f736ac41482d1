use crate::helpers::{Backend, fresh_database, pg_base_url, require, spawn_app_on};
use crate::on_both_backends;

on_both_backends!(replica: health_and_readiness, |app: TestApp| async move {
    let (status, body) = app.get_json("/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    let (status, body) = app.get_json("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ready");
    assert!(["sqlite", "postgres"].contains(&body["store"].as_str().unwrap()));
});

on_both_backends!(replica: request_ids, |app: TestApp| async move {
    let generated = app.get("/healthz").await;
    let id = generated.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "a generated id is a UUID without dashes: {id}");
    let echoed = app.client.get(app.url("/v1/daos")).header("x-request-id", "agent-run-42").send().await.unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "agent-run-42");
    let body: serde_json::Value = echoed.json().await.unwrap();
    assert_eq!(body["request"]["requestId"], "agent-run-42");
    // A value that is not a short printable token is replaced, not echoed.
    let replaced = app.client.get(app.url("/healthz")).header("x-request-id", "x".repeat(500)).send().await.unwrap();
    assert_ne!(replaced.headers()["x-request-id"].to_str().unwrap(), "x".repeat(500));
});

/// With its database gone, the server says so: readiness fails and reads answer 503 problems,
/// never a 500 or a hang.
// PostgreSQL only: a SQLite store is a file the server holds open.
#[tokio::test]
async fn a_lost_store_is_unavailable_not_an_error() {
    use sea_orm::ConnectionTrait;
    if !require(Backend::Postgres) {
        return;
    }
    let url = fresh_database(Backend::Postgres).await;
    let app = spawn_app_on(url.clone()).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    let name = url.rsplit('/').next().unwrap().to_owned();
    let admin = sea_orm::Database::connect(format!("{}/postgres", pg_base_url())).await.unwrap();
    admin.execute_unprepared(&format!("DROP DATABASE \"{name}\" WITH (FORCE)")).await.unwrap();
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 503);
    assert_eq!(ready.headers()["content-type"], "application/problem+json");
    let (status, body) = app.get_json("/v1/daos").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "UNAVAILABLE");
    assert_eq!(app.get("/healthz").await.status(), 200, "the process itself is up");
}
