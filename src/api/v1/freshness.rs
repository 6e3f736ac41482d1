//! `GET /v1/system/freshness`: dataset state and ingestion freshness.
use poem::web::Data;
use poem_openapi::{Object, OpenApi, payload::Json};

use super::V1Tag;
use crate::api::AppState;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::SourceKind;
use crate::contract::vocabulary::{NodeHealth, NodeRole, RunStatus, RunTrigger};
use crate::contract::{
    api_error::ApiError,
    envelope::{CacheStatus, Freshness, V1Envelope, V1Request},
    operations::FreshnessGetV1 as Op,
    time::now_ms,
};
use crate::store::{self, entities::ingestion_run};

/// The serving data revision.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct Revision {
    /// Increases with every publication; v2 cursors are bound to it.
    pub id: String,
    pub published_at: Timestamp,
    pub data_as_of: Timestamp,
    pub summary: String,
}

/// One ingestion run.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct Run {
    pub id: String,
    /// `import` (the bundled sample), `manual` (`govdata ingest`), `schedule` (`--ingest-every`)
    /// or `live` (an on-demand refresh).
    pub trigger: String,
    /// `running`, `succeeded`, `partial` (some sources failed: see `error` and each source's
    /// `lastStatus`), `failed`, or `abandoned` (its process stopped before it finished).
    pub status: String,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub rows_written: String,
    /// Malformed upstream rows that were reported and skipped.
    pub rows_skipped: String,
    pub error: Option<String>,
}

/// The watermark of one DAO's source.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct SourceFreshness {
    pub dao_id: String,
    pub source: String,
    /// The time up to which this source's data is complete.
    pub data_as_of: Option<Timestamp>,
    /// Seconds between `dataAsOf` and this response, as an exact decimal string.
    pub lag_seconds: Option<String>,
    /// How this source's last ingestion ended: `succeeded` or `failed`.
    pub last_status: Option<String>,
    /// Why it failed, when it did.
    pub last_error: Option<String>,
    pub updated_at: Timestamp,
}

/// Row counts of the published dataset, as exact decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct DatasetCounts {
    pub daos: String,
    pub proposals: String,
    /// Upstream vote totals, summed over proposals.
    pub upstream_votes: String,
    /// Votes held in this store.
    pub ingested_votes: String,
    pub voters: String,
    pub delegates: String,
    pub forum_topics: String,
    pub governance_events: String,
    pub signals: String,
}

/// A database node this server reads from, as it last probed it.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct StoreNode {
    /// `primary`, or `replica-1`, `replica-2`, … in the order they are configured.
    pub name: String,
    pub role: NodeRole,
    /// `serving` nodes are read from; a `lagging` or `down` one is left until it catches up or
    /// answers again.
    pub state: NodeHealth,
    /// The newest revision the node shows. Reads of a revision go only to nodes that show it.
    pub revision: Option<String>,
    /// How far behind the primary the node is, in seconds, as an exact decimal string ("0" for
    /// the primary).
    pub lag_seconds: String,
    /// WAL bytes the node has not replayed yet, as an exact decimal string.
    pub lag_bytes: String,
    /// Why the node is left, while it is.
    pub error: Option<String>,
}

/// Dataset state.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct SystemFreshness {
    /// The serving revision; absent before the first publication.
    pub revision: Option<Revision>,
    /// The most recent ingestion run.
    pub last_run: Option<Run>,
    /// Watermarks per DAO and source.
    pub sources: Vec<SourceFreshness>,
    pub counts: DatasetCounts,
    /// The database nodes this server reads from: the primary, and the streaming replicas
    /// serving reads, each with its lag.
    pub store_nodes: Vec<StoreNode>,
}

impl poem_openapi::types::Example for SystemFreshness {
    fn example() -> Self {
        let at = Timestamp::known("2026-03-26T00:00:00.000Z");
        Self {
            revision: Some(Revision {
                id: "1".to_owned(),
                published_at: Timestamp::known("2026-11-22T10:00:00.000Z"),
                data_as_of: at.clone(),
                summary: "sample import (run 1)".to_owned(),
            }),
            last_run: Some(Run {
                id: "1".to_owned(),
                trigger: RunTrigger::Import.as_str().to_owned(),
                status: RunStatus::Succeeded.as_str().to_owned(),
                started_at: Timestamp::known("2026-11-22T09:59:58.000Z"),
                finished_at: Some(Timestamp::known("2026-11-22T10:00:00.000Z")),
                rows_written: "27119".to_owned(),
                rows_skipped: "0".to_owned(),
                error: None,
            }),
            sources: vec![SourceFreshness {
                dao_id: "arbitrum".to_owned(),
                source: SourceKind::Snapshot.as_str().to_owned(),
                data_as_of: Some(at),
                lag_seconds: Some("20995200".to_owned()),
                last_status: Some(RunStatus::Succeeded.as_str().to_owned()),
                last_error: None,
                updated_at: Timestamp::known("2026-11-22T10:00:00.000Z"),
            }],
            counts: DatasetCounts {
                daos: "8".to_owned(),
                proposals: "131".to_owned(),
                upstream_votes: "120103".to_owned(),
                ingested_votes: "19970".to_owned(),
                voters: "6488".to_owned(),
                delegates: "500".to_owned(),
                forum_topics: "0".to_owned(),
                governance_events: "0".to_owned(),
                signals: "0".to_owned(),
            },
            store_nodes: vec![
                StoreNode {
                    name: "primary".to_owned(),
                    role: NodeRole::Primary,
                    state: NodeHealth::Serving,
                    revision: Some("1".to_owned()),
                    lag_seconds: "0".to_owned(),
                    lag_bytes: "0".to_owned(),
                    error: None,
                },
                StoreNode {
                    name: "replica-1".to_owned(),
                    role: NodeRole::Replica,
                    state: NodeHealth::Serving,
                    revision: Some("1".to_owned()),
                    lag_seconds: "0.012".to_owned(),
                    lag_bytes: "1048".to_owned(),
                    error: None,
                },
            ],
        }
    }
}

pub struct Api;

#[OpenApi(prefix_path = "/v1", tag = "V1Tag::Freshness")]
impl Api {
    /// Dataset freshness and state
    ///
    /// How current the data is, overall and per DAO and source: the serving data revision and
    /// when it was published, each source's watermark and lag, the last ingestion run with its
    /// status and error, and row counts. Call it to decide whether the data is recent enough for
    /// a task before making other calls.
    #[oai(path = "/system/freshness", method = "get", operation_id = "freshness_get")]
    async fn freshness_get(
        &self,
        state: Data<&AppState>,
        req: V1Request,
    ) -> Result<Json<V1Envelope<SystemFreshness>>, ApiError<Op>> {
        let s = store::freshness::dataset_state(&state.reads()).await?;
        let now = now_ms();
        // The newest watermark: it moves with every successful run, also one that publishes nothing.
        let newest =
            s.watermarks.iter().filter_map(|w| w.data_as_of_ms).max().or(s.revision.as_ref().map(|r| r.data_as_of_ms));
        // Row counts the serving revision recorded at publication (0 before the first one).
        let counted =
            |count: fn(&store::entities::data_revision::Model) -> i64| s.revision.as_ref().map_or(0, count).to_string();
        let data = SystemFreshness {
            revision: s.revision.as_ref().map(|r| Revision {
                id: r.id.to_string(),
                published_at: Timestamp::from_ms(r.published_ms),
                data_as_of: Timestamp::from_ms(r.data_as_of_ms),
                summary: r.summary.clone(),
            }),
            last_run: s.last_run.map(|r| run(r, now)),
            sources: s
                .watermarks
                .into_iter()
                .map(|w| SourceFreshness {
                    lag_seconds: w.data_as_of_ms.map(|t| lag_seconds(now, t)),
                    data_as_of: w.data_as_of_ms.map(Timestamp::from_ms),
                    dao_id: w.dao_id,
                    source: w.source.as_str().to_owned(),
                    last_status: w.last_status,
                    last_error: w.last_error,
                    updated_at: Timestamp::from_ms(w.updated_ms),
                })
                .collect(),
            counts: DatasetCounts {
                daos: s.totals.daos.to_string(),
                proposals: s.totals.proposals.to_string(),
                upstream_votes: s.totals.upstream_votes.to_string(),
                ingested_votes: s.totals.ingested_votes.to_string(),
                voters: counted(|r| r.voters),
                delegates: s.totals.delegates.to_string(),
                forum_topics: counted(|r| r.forum_topics),
                governance_events: counted(|r| r.governance_events),
                signals: counted(|r| r.signals),
            },
            store_nodes: state.nodes.report().into_iter().map(store_node).collect(),
        };
        let freshness = Freshness::new(newest, CacheStatus::Fresh);
        Ok(Json(req.respond(freshness, data)))
    }
}

fn run(r: ingestion_run::Model, now_ms: i64) -> Run {
    Run {
        id: r.id.to_string(),
        status: r.status_at(now_ms).as_str().to_owned(),
        trigger: r.trigger.as_str().to_owned(),
        started_at: Timestamp::from_ms(r.started_ms),
        finished_at: r.finished_ms.map(Timestamp::from_ms),
        rows_written: r.rows_written.to_string(),
        rows_skipped: r.rows_skipped.to_string(),
        error: r.error,
    }
}

/// Whole milliseconds as exact seconds: `1500` → `1.5`.
fn lag_seconds(now_ms: i64, as_of_ms: i64) -> String {
    let lag = (now_ms - as_of_ms).max(0);
    let (secs, millis) = (lag / 1000, lag % 1000);
    if millis == 0 { secs.to_string() } else { format!("{secs}.{millis:03}").trim_end_matches('0').to_owned() }
}

fn store_node(n: store::nodes::NodeReport) -> StoreNode {
    StoreNode {
        name: n.name,
        role: n.role,
        state: n.state.health,
        revision: n.state.revision.map(|r| r.to_string()),
        lag_seconds: lag_seconds(i64::try_from(n.state.lag.as_millis()).unwrap_or(i64::MAX), 0),
        lag_bytes: n.state.lag_bytes.to_string(),
        error: n.state.error,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lag_is_exact() {
        assert_eq!(super::lag_seconds(2500, 1000), "1.5");
        assert_eq!(super::lag_seconds(3000, 1000), "2");
        assert_eq!(super::lag_seconds(1000, 3000), "0");
        assert_eq!(super::lag_seconds(1001, 0), "1.001");
    }
}
