//! Importing the sample: idempotent, exact, on both backends.
use govdata::store::entities::{data_revision, delegate, vote};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};

use crate::helpers::fresh_database;
use crate::on_both_backends;

on_both_backends!(replica: import_is_idempotent_and_exact, |backend: Backend| async move {
    let url = fresh_database(backend).await;
    let db = govdata::store::connect(&url).await.unwrap();
    let first = govdata::sample::import_if_empty(&db).await.unwrap().expect("an empty store is loaded");
    assert!(first.changed);
    assert!(first.skipped.is_empty(), "the bundled sample has no malformed rows: {first}");
    assert!(govdata::sample::import_if_empty(&db).await.unwrap().is_none(), "a loaded store is left alone");
    let second = govdata::sample::import(
        &db,
        &govdata::sample::SampleFiles::bundled(),
        govdata::contract::vocabulary::RunTrigger::Manual,
    )
    .await
    .unwrap();
    assert!(!second.changed, "importing twice changes nothing");
    assert_eq!(data_revision::Entity::find().count(&db).await.unwrap(), 1);
    assert_eq!(vote::Entity::find().count(&db).await.unwrap(), 19_970);
    // Exact text, never through f64: scientific notation and 26-digit wei integers survive.
    let tiny = vote::Entity::find()
        .filter(vote::Column::VotingPower.eq("2.11e-16"))
        .one(&db)
        .await
        .unwrap()
        .expect("2.11e-16 kept");
    assert!(tiny.vp_from_float);
    let big = delegate::Entity::find()
        .filter(delegate::Column::VotingPowerRaw.eq("2747125319199463129610556"))
        .one(&db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(big.voting_power, "2747125.319199463129610556");
    assert_eq!(big.dao_id, "aave");
    db.close().await.unwrap();
});
