//! Every error is an RFC 9457 problem with a stable code, never a bare status or a 500.
use crate::on_both_backends;

async fn problem(
    app: &crate::helpers::TestApp,
    method: reqwest::Method,
    path: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let r = app.client.request(method, app.url(path)).send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    assert_eq!(headers["content-type"], "application/problem+json", "{path}");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert_eq!(body["requestId"], headers["x-request-id"].to_str().unwrap());
    assert!(body["type"].as_str().unwrap().starts_with("urn:govdata:problem:"));
    assert!(!body["title"].as_str().unwrap().is_empty());
    assert!(!body["detail"].as_str().unwrap().is_empty());
    (status, headers, body)
}

on_both_backends!(unknown_paths_are_404_problems, |app: TestApp| async move {
    for path in ["/nope", "/v1/nope", "/v2/nope", "/v1/daos/extra/segments/here"] {
        let (status, _, body) = problem(&app, reqwest::Method::GET, path).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(body["code"], "NOT_FOUND");
    }
});

on_both_backends!(wrong_methods_are_405_problems_with_allow, |app: TestApp| async move {
    for (method, path) in [
        (reqwest::Method::POST, "/v1/daos"),
        (reqwest::Method::DELETE, "/v2/daos/uniswap"),
        (reqwest::Method::PUT, "/v1/meta/pricing"),
    ] {
        let (status, headers, body) = problem(&app, method, path).await;
        assert_eq!(status, 405, "{path}");
        assert_eq!(body["code"], "METHOD_NOT_ALLOWED");
        assert_eq!(headers["allow"], "GET");
    }
});

on_both_backends!(unparseable_parameters_are_validation_errors, |app: TestApp| async move {
    for (query, name, received) in
        [("limit=ten", "limit", "ten"), ("offset=1.5", "offset", "1.5"), ("limit=", "limit", "")]
    {
        let (status, _, body) = problem(&app, reqwest::Method::GET, &format!("/v1/daos?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert_eq!(body["code"], "VALIDATION_ERROR");
        let error = &body["errors"][0];
        assert_eq!(error["in"], "query");
        assert_eq!(error["name"], name, "named by its public name");
        assert_eq!(error["received"], received);
        assert_eq!(error["expected"], "an integer");
    }
});

on_both_backends!(unknown_dao_is_404, |app: TestApp| async move {
    let (status, _, body) = problem(&app, reqwest::Method::GET, "/v2/daos/no-such-dao").await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "NOT_FOUND");
    assert!(body["detail"].as_str().unwrap().contains("no-such-dao"));
    assert!(body.get("errors").is_none(), "absent members are omitted, not null");
});
