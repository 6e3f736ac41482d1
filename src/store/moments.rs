//! Timed and threshold entries of the feed (issue 48): the moments of a proposal that time alone
//! (or a count crossing a line) makes news, fed exactly once each.
//!
//! - `voting_ends_soon`, once per horizon of `VOTING_ENDS_SOON_HORIZONS`: at the voting end minus
//!   the horizon (or at the start, for voting shorter than the horizon), while voting is open;
//! - `voting_ended`: at the voting end;
//! - `proposal_executable`: when a queued proposal's ETA passes (not executed, canceled or past
//!   its grace period);
//! - `quorum_reached`: the first publication whose counted votes of an open proposal reach its
//!   quorum, counted as its counting mode counts (`rules::evidence::quorum_votes`).
//!
//! Every publication derives them ([`derive`], inside its transaction and its writer's turn, as
//! it derives events), so a moment is fed by whichever publication comes first after it: an
//! ingestion run's, or the one the scheduler inside `serve` makes for it (`store::timed`) within
//! `TIMED_ENTRY_TICK` of the moment. The key of `feed_moments` (proposal, kind, horizon) is
//! written in the same transaction as the entry: with publications taking turns, each moment is
//! fed once whatever the number of processes, and a process that was down catches up, in order,
//! on what became due meanwhile (back to `TIMED_ENTRY_CATCH_UP`).
//!
//! The due moments are found through the proposals' indexes (`ix_proposals_state`: state, end;
//! `ix_proposals_end`), so a look costs what the open proposals cost, not the store.
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QuerySelect, Statement, Value,
};
use serde::{Deserialize, Serialize};

use super::entities::proposal;
use super::stored::Scores;
use crate::contract::feed::{FeedKind, TIMED_ENTRY_CATCH_UP, VOTING_ENDS_SOON_HORIZONS};
use crate::contract::vocabulary::{ProposalSource, ProposalState};
use crate::rules::evidence;

/// Proposals read per statement.
const CHUNK: usize = 500;

/// A proposal's moment as the feed reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MomentRecord {
    pub proposal_id: i64,
    pub dao_id: String,
    pub proposal_key: String,
    pub source: ProposalSource,
    pub external_id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The moment (epoch ms): the end minus the horizon (not before the start), the end, the
    /// ETA, or the publication that counted the quorum reached.
    pub at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ms: Option<i64>,
    /// `voting_ends_soon`: the horizon, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon_s: Option<i64>,
    /// `quorum_reached`: the quorum and the votes that count toward it, exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum_votes: Option<String>,
    /// `proposal_executable`: the ETA as the governor's `ProposalQueued` carried it (seconds,
    /// exact text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<String>,
}

/// A moment due, with its kind and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub kind: FeedKind,
    pub horizon_s: i64,
    pub moment: MomentRecord,
}

impl Due {
    /// The order moments are fed in: by moment, longer horizons first, then by kind and proposal.
    fn order(&self) -> (i64, i64, FeedKind, i64) {
        (self.moment.at_ms, -self.horizon_s, self.kind, self.moment.proposal_id)
    }
}

#[derive(Debug, Clone, FromQueryResult)]
struct ProposalRow {
    id: i64,
    dao_id: String,
    proposal_key: String,
    source: ProposalSource,
    external_id: String,
    title: String,
    url: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

impl ProposalRow {
    fn moment(&self, at_ms: i64) -> MomentRecord {
        MomentRecord {
            proposal_id: self.id,
            dao_id: self.dao_id.clone(),
            proposal_key: self.proposal_key.clone(),
            source: self.source,
            external_id: self.external_id.clone(),
            title: self.title.clone(),
            url: self.url.clone(),
            at_ms,
            end_ms: self.end_ms,
            horizon_s: None,
            quorum: None,
            quorum_votes: None,
            eta: None,
        }
    }
}

const PROPOSAL_COLUMNS: &str =
    "p.id, p.dao_id, p.proposal_key, p.source, p.external_id, p.title, p.url, p.start_ms, p.end_ms";

/// `NOT EXISTS` a fed moment of `kind` (and horizon `$n`) for proposal `p`.
fn not_fed(kind: FeedKind, horizon: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM feed_moments m WHERE m.proposal_id = p.id AND m.kind = '{}' AND m.horizon_s = {horizon})",
        kind.as_str()
    )
}

async fn proposals(db: &impl ConnectionTrait, sql: String, values: Vec<Value>) -> Result<Vec<ProposalRow>, DbErr> {
    ProposalRow::find_by_statement(Statement::from_sql_and_values(db.get_database_backend(), sql, values)).all(db).await
}

/// The timed moments due at `now_ms` and not fed yet, in the order they are fed.
pub async fn timed_due(db: &impl ConnectionTrait, now_ms: i64) -> Result<Vec<Due>, DbErr> {
    let mut due = Vec::new();
    let open = format!("p.state IN ('{}', '{}')", ProposalState::Pending.as_str(), ProposalState::Active.as_str());
    for horizon in VOTING_ENDS_SOON_HORIZONS {
        let horizon_ms = horizon.as_millis() as i64;
        let horizon_s = horizon.as_secs() as i64;
        // Voting open (started, not ended) and at most the horizon left.
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS} FROM proposals p
             WHERE {open} AND p.end_ms > $1 AND p.end_ms <= $2 AND (p.start_ms IS NULL OR p.start_ms <= $1)
               AND {}
             ORDER BY p.end_ms, p.id",
            not_fed(FeedKind::VotingEndsSoon, "$3")
        );
        for p in proposals(db, sql, vec![now_ms.into(), (now_ms + horizon_ms).into(), horizon_s.into()]).await? {
            let end = p.end_ms.unwrap_or(now_ms);
            let at = (end - horizon_ms).max(p.start_ms.unwrap_or(i64::MIN));
            let mut moment = p.moment(at);
            moment.horizon_s = Some(horizon_s);
            due.push(Due { kind: FeedKind::VotingEndsSoon, horizon_s, moment });
        }
    }
    let catch_up_ms = TIMED_ENTRY_CATCH_UP.as_millis() as i64;
    // Ended within the catch-up window; a canceled proposal's vote did not end, it stopped.
    let sql = format!(
        "SELECT {PROPOSAL_COLUMNS} FROM proposals p
         WHERE p.end_ms <= $1 AND p.end_ms > $2 AND p.state <> '{}' AND {}
         ORDER BY p.end_ms, p.id",
        ProposalState::Canceled.as_str(),
        not_fed(FeedKind::VotingEnded, "0")
    );
    for p in proposals(db, sql, vec![now_ms.into(), (now_ms - catch_up_ms).into()]).await? {
        let moment = p.moment(p.end_ms.unwrap_or(now_ms));
        due.push(Due { kind: FeedKind::VotingEnded, horizon_s: 0, moment });
    }
    due.extend(executable(db, now_ms, catch_up_ms).await?);
    due.sort_by_key(Due::order);
    Ok(due)
}

/// Queued proposals whose ETA passed within the catch-up window, neither executed nor canceled
/// nor past their grace period, not fed yet. Queued and waiting proposals are few; the ETA is
/// exact text (any uint256), so it is compared here rather than cast in SQL.
async fn executable(db: &impl ConnectionTrait, now_ms: i64, catch_up_ms: i64) -> Result<Vec<Due>, DbErr> {
    #[derive(FromQueryResult)]
    struct Waiting {
        eta: String,
        grace_period_s: Option<i64>,
    }
    let sql = format!(
        "SELECT {PROPOSAL_COLUMNS}, x.eta, x.grace_period_s FROM proposals p
         JOIN proposal_executions x ON x.proposal_id = p.id
         WHERE p.state = '{}' AND x.eta IS NOT NULL AND x.executed_ms IS NULL AND x.canceled_ms IS NULL AND {}
         ORDER BY p.id",
        ProposalState::Queued.as_str(),
        not_fed(FeedKind::ProposalExecutable, "0")
    );
    let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, []);
    let mut due = Vec::new();
    for row in db.query_all_raw(stmt).await? {
        let p = ProposalRow::from_query_result(&row, "")?;
        let w = Waiting::from_query_result(&row, "")?;
        // Past i64 milliseconds is never (an ETA of a year 292 million).
        let Some(eta_ms) = w.eta.parse::<i64>().ok().and_then(|s| s.checked_mul(1000)) else { continue };
        let expired = w.grace_period_s.is_some_and(|g| eta_ms.saturating_add(g.saturating_mul(1000)) <= now_ms);
        if eta_ms > now_ms || eta_ms <= now_ms - catch_up_ms || expired {
            continue;
        }
        let mut moment = p.moment(eta_ms);
        moment.eta = Some(w.eta);
        due.push(Due { kind: FeedKind::ProposalExecutable, horizon_s: 0, moment });
    }
    Ok(due)
}

/// Open proposals among `scope` (every open one for `None`) whose counted votes reached their
/// quorum and whose `quorum_reached` was not fed yet, as of the publication at `now_ms`.
pub async fn quorum_due(db: &impl ConnectionTrait, now_ms: i64, scope: Option<&[i64]>) -> Result<Vec<Due>, DbErr> {
    #[derive(FromQueryResult)]
    struct Counting {
        id: i64,
        counting_mode: Option<String>,
        scores: Option<Scores>,
        scores_total: Option<String>,
        quorum: Option<String>,
    }
    let open = [ProposalState::Pending, ProposalState::Active];
    let base = || {
        proposal::Entity::find()
            .select_only()
            .columns([
                proposal::Column::Id,
                proposal::Column::CountingMode,
                proposal::Column::Scores,
                proposal::Column::ScoresTotal,
                proposal::Column::Quorum,
            ])
            .filter(proposal::Column::State.is_in(open))
            .filter(proposal::Column::Quorum.is_not_null())
    };
    let mut rows = Vec::new();
    match scope {
        Some(ids) => {
            for chunk in ids.chunks(CHUNK) {
                rows.extend(
                    base()
                        .filter(proposal::Column::Id.is_in(chunk.iter().copied()))
                        .into_model::<Counting>()
                        .all(db)
                        .await?,
                );
            }
        }
        None => rows.extend(base().into_model::<Counting>().all(db).await?),
    }
    let reached: Vec<(i64, String, String)> = rows
        .into_iter()
        .filter_map(|c| {
            let votes = evidence::quorum_votes(
                c.counting_mode.as_deref(),
                c.scores.as_ref().map(|s| s.0.as_slice()),
                c.scores_total.as_deref(),
            )?;
            let quorum = c.quorum?;
            (evidence::quorum(Some(&quorum), Some(&votes)) == evidence::Quorum::Reached)
                .then_some((c.id, quorum, votes))
        })
        .collect();
    let mut due = Vec::new();
    for chunk in reached.chunks(CHUNK) {
        let sql = format!(
            "SELECT {PROPOSAL_COLUMNS} FROM proposals p WHERE p.id IN ({}) AND {} ORDER BY p.id",
            super::placeholders(1, chunk.len()),
            not_fed(FeedKind::QuorumReached, "0")
        );
        let values = chunk.iter().map(|(id, _, _)| Value::from(*id)).collect();
        for p in proposals(db, sql, values).await? {
            let Some((_, quorum, votes)) = chunk.iter().find(|(id, _, _)| *id == p.id) else { continue };
            let mut moment = p.moment(now_ms);
            moment.quorum = Some(quorum.clone());
            moment.quorum_votes = Some(votes.clone());
            due.push(Due { kind: FeedKind::QuorumReached, horizon_s: 0, moment });
        }
    }
    Ok(due)
}

/// The moments a publication at `now_ms` feeds: the timed ones due, and the quorums reached among
/// the proposals it touched (`None`: every open proposal). Each is keyed in `feed_moments` by
/// `revision_id`'s publication; one another publication keyed first is not fed again.
pub async fn derive(
    db: &impl ConnectionTrait,
    now_ms: i64,
    scope: Option<&[i64]>,
    revision_id: i64,
) -> Result<Vec<Due>, DbErr> {
    let mut due = timed_due(db, now_ms).await?;
    due.extend(quorum_due(db, now_ms, scope).await?);
    due.sort_by_key(Due::order);
    let mut fed = Vec::with_capacity(due.len());
    for d in due {
        let sql = "INSERT INTO feed_moments (proposal_id, kind, horizon_s, dao_id, moment_ms, revision_id)
                   VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (proposal_id, kind, horizon_s) DO NOTHING";
        let values: Vec<Value> = vec![
            d.moment.proposal_id.into(),
            d.kind.as_str().into(),
            d.horizon_s.into(),
            d.moment.dao_id.clone().into(),
            d.moment.at_ms.into(),
            revision_id.into(),
        ];
        let inserted = db
            .execute_raw(Statement::from_sql_and_values(db.get_database_backend(), sql, values))
            .await?
            .rows_affected();
        if inserted == 1 {
            fed.push(d);
        }
    }
    Ok(fed)
}

/// When the next timed moment after `now_ms` falls, as far as the store knows now (a later
/// ingestion may bring a nearer one: the scheduler looks again at least every tick).
pub async fn next_moment(db: &impl ConnectionTrait, now_ms: i64) -> Result<Option<i64>, DbErr> {
    let open = format!("state IN ('{}', '{}')", ProposalState::Pending.as_str(), ProposalState::Active.as_str());
    let mut candidates: Vec<String> = vec![
        format!("SELECT MIN(start_ms) AS at FROM proposals WHERE {open} AND start_ms > $1"),
        format!("SELECT MIN(end_ms) AS at FROM proposals WHERE {open} AND end_ms > $1"),
    ];
    for horizon in VOTING_ENDS_SOON_HORIZONS {
        let ms = horizon.as_millis() as i64;
        candidates.push(format!("SELECT MIN(end_ms - {ms}) AS at FROM proposals WHERE {open} AND end_ms > $1 + {ms}"));
    }
    let mut next: Option<i64> = None;
    for sql in candidates {
        let stmt = Statement::from_sql_and_values(db.get_database_backend(), sql, [now_ms.into()]);
        if let Some(row) = db.query_one_raw(stmt).await?
            && let Some(at) = row.try_get::<Option<i64>>("", "at")?
        {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    Ok(next)
}
