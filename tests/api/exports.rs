//! Whole-table exports (issue 30), the writers: a DAO's votes written as Parquet, CSV and NDJSON
//! from the real store, read back by a Parquet reader (arrow-rs), a CSV reader and a JSON parser,
//! and compared value by value with the store. Typed columns survive (a wei integer as
//! `DECIMAL(76,0)`, instants as UTC milliseconds), the schema travels in the file, and the same
//! votes write the same bytes.
use std::collections::BTreeMap;

use arrow_array::{Array, StringArray};
use arrow_schema::{DataType, TimeUnit};
use govdata::contract::exports::{ExportFormat, VOTES};
use govdata::exports::{export, votes};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use crate::on_both_backends;

const DAO: &str = "uniswap";

on_both_backends!(votes_export_in_every_format_equals_the_store, |app: TestApp| async move {
    let db = govdata::store::connect(&app.database_url).await.unwrap();
    let stored = govdata::store::entities::vote::Entity::find()
        .filter(govdata::store::entities::vote::Column::DaoId.eq(DAO))
        .all(&db)
        .await
        .unwrap();
    assert!(stored.len() > 1000, "the sample holds the DAO's votes");
    let proposals: BTreeMap<i64, String> = govdata::store::entities::proposal::Entity::find()
        .filter(govdata::store::entities::proposal::Column::DaoId.eq(DAO))
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.id, p.external_id))
        .collect();
    // (proposal, voter) is a vote's natural key.
    let power: BTreeMap<(String, String), (i64, String)> = stored
        .iter()
        .map(|v| ((proposals[&v.proposal_id].clone(), v.voter.lower()), (v.created_ms, v.voting_power.clone())))
        .collect();
    assert_eq!(power.len(), stored.len());
    let dir = tempfile::tempdir().unwrap();
    let mut written = BTreeMap::new();
    for format in ExportFormat::ALL {
        let path = dir.path().join(format!("votes.{}", format.as_str()));
        let w = export(&path, &VOTES, *format, |out| votes::read(&db, DAO, out)).await.unwrap();
        assert_eq!(w.rows, stored.len() as u64, "{format:?}");
        assert_eq!(w.bytes, std::fs::metadata(&path).unwrap().len());
        written.insert(*format, (path, w));
    }

    // Parquet: typed columns, the schema in the file's metadata, every power exact.
    let (path, _) = &written[&ExportFormat::Parquet];
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let meta = builder.metadata().file_metadata().key_value_metadata().unwrap();
    let schema_doc = meta.iter().find(|kv| kv.key == "govdata.schema").and_then(|kv| kv.value.clone()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&schema_doc).unwrap();
    assert_eq!(doc["columns"].as_array().unwrap().len(), VOTES.columns.len());
    let schema = builder.schema().clone();
    assert_eq!(schema.field_with_name("voting_power_wei").unwrap().data_type(), &DataType::Decimal256(76, 0));
    assert_eq!(
        schema.field_with_name("created_at").unwrap().data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    let mut rows = 0;
    for batch in builder.build().unwrap() {
        let batch = batch.unwrap();
        let string =
            |name: &str| batch.column_by_name(name).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone();
        let (proposal, voter, vp) = (string("proposal_external_id"), string("voter"), string("voting_power"));
        let created = batch
            .column_by_name("created_at")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::TimestampMillisecondArray>()
            .unwrap()
            .clone();
        for i in 0..batch.num_rows() {
            let key = (proposal.value(i).to_owned(), voter.value(i).to_owned());
            let (ms, exact) = &power[&key];
            assert_eq!((created.value(i), vp.value(i)), (*ms, exact.as_str()), "{key:?}");
        }
        rows += batch.num_rows();
    }
    assert_eq!(rows, stored.len());

    // CSV: RFC 4180 with a header of the declared names and CRLF line ends.
    let (path, _) = &written[&ExportFormat::Csv];
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\r\n"));
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(header, VOTES.columns.iter().map(|c| c.name).collect::<Vec<_>>());
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), stored.len());
    for r in &records {
        let created =
            time::OffsetDateTime::parse(&r[at("created_at")], &time::format_description::well_known::Rfc3339).unwrap();
        let key = (r[at("proposal_external_id")].to_owned(), r[at("voter")].to_owned());
        let (ms, exact) = &power[&key];
        assert_eq!(
            ((created.unix_timestamp_nanos() / 1_000_000) as i64, &r[at("voting_power")]),
            (*ms, exact.as_str())
        );
        assert!(r[at("created_at")].ends_with('Z') && r[at("created_at")].len() == 24, "ms, UTC");
    }

    // NDJSON: one object a line, exact values as strings.
    let (path, _) = &written[&ExportFormat::Ndjson];
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), stored.len());
    assert!(lines.iter().all(|l| l["voting_power"].is_string() && l["dao_id"] == DAO));

    // The same votes write the same bytes.
    for format in ExportFormat::ALL {
        let again = dir.path().join(format!("again.{}", format.as_str()));
        let w = export(&again, &VOTES, *format, |out| votes::read(&db, DAO, out)).await.unwrap();
        assert_eq!(w, written[format].1, "{format:?}");
    }
});
