use crate::helpers::{sample_database, snapshot_settings, spawn_app_with};
use crate::on_both_backends;

on_both_backends!(pricing_lists_every_paid_endpoint_from_the_declarations, |app: TestApp| async move {
    let (status, body) = app.get_json("/v1/meta/pricing").await;
    assert_eq!(status, 200);
    crate::daos::assert_no_floats(&body, "$");
    let data = &body["data"];
    let endpoints = data["endpoints"].as_array().unwrap();
    // Exactly the paid operations of the contract table, each with its tier and price.
    let mut expected: Vec<(String, &str)> = govdata::contract::operations::ALL
        .iter()
        .filter(|d| d.tier().is_some())
        .map(|d| (format!("{:?}", d.version).to_lowercase(), d.id))
        .collect();
    let mut listed: Vec<(String, &str)> = endpoints
        .iter()
        .map(|e| (e["version"].as_str().unwrap().to_owned(), e["operationId"].as_str().unwrap()))
        .collect();
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected, "every paid operation, and only those");
    let freshness = endpoints.iter().find(|e| e["operationId"] == "freshness_get").unwrap();
    assert_eq!(freshness["method"], "GET");
    assert_eq!(freshness["path"], "/v1/system/freshness");
    assert_eq!(freshness["tier"], "standard");
    assert_eq!(freshness["price"], "1000");
    assert_eq!(freshness["scopes"], serde_json::json!(["v1:paid:standard", "v1:paid:plus", "v1:paid:*"]));
    let v2 = endpoints.iter().find(|e| e["operationId"] == "v2_daos_get").unwrap();
    assert_eq!(v2["path"], "/v2/daos/{daoId}");
    assert_eq!(v2["scopes"], serde_json::json!(["v2:paid:standard", "v2:paid:plus", "v2:paid:*"]));
    // Tiers and x402 terms.
    assert_eq!(data["tiers"][0], serde_json::json!({"tier": "standard", "price": "1000", "priceDecimal": "0.001"}));
    assert_eq!(data["tiers"][1], serde_json::json!({"tier": "plus", "price": "5000", "priceDecimal": "0.005"}));
    assert_eq!(data["x402"]["versions"], serde_json::json!([1, 2]));
    assert_eq!(data["x402"]["network"], "eip155:84532");
    assert_eq!(data["x402"]["networkV1"], "base-sepolia");
    assert_eq!(data["x402"]["paymentsEnabled"], false);
    assert!(data["x402"].get("payTo").is_none(), "unset payTo is omitted");
    assert_eq!(data["partnerToken"]["header"], "x-service-api-token");
    assert_eq!(data["partnerToken"]["scopes"].as_array().unwrap().len(), 6);
    assert_eq!(
        data["partnerToken"]["scopes"][1],
        serde_json::json!({"scope": "v1:paid:plus", "version": "v1", "tiers": ["standard", "plus"]})
    );
    snapshot_settings().bind(|| insta::assert_json_snapshot!("v1_pricing_get_default_prices", body));
});

// A deployment that prices in another asset states that asset's decimals, and the whole-unit
// prices follow them.
on_both_backends!(pricing_follows_the_configured_asset, |backend: Backend| async move {
    let app = spawn_app_with(sample_database(backend), |a| {
        a.payments.asset = "0x6B175474E89094C44Da98b954EedeAC495271d0F".to_owned();
        a.payments.asset_decimals = 18;
        a.payments.price_standard = 1500;
    })
    .await;
    let (status, body) = app.get_json("/v1/meta/pricing").await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert_eq!(data["x402"]["asset"], "0x6B175474E89094C44Da98b954EedeAC495271d0F");
    assert_eq!(data["x402"]["assetDecimals"], 18);
    assert_eq!(
        data["tiers"][0],
        serde_json::json!({"tier": "standard", "price": "1500", "priceDecimal": "0.0000000000000015"})
    );
});
