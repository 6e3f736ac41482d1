//! An on-chain proposal's execution lifecycle as served: queued, executable, executed, canceled,
//! expired (issue 47), from the governor's own logs (`store::executions`).
use poem_openapi::Object;
use sea_orm::ConnectionTrait;

use crate::contract::errors::Problem;
use crate::contract::time::Timestamp;
use crate::contract::vocabulary::ProposalState;
use crate::store::entities::{proposal, proposal_execution};
use crate::store::failures::problem_marking_read_failed;

/// What an on-chain proposal's governor recorded of its execution: when it was queued in the
/// timelock and with which ETA, from when it can execute and until when, and when it was
/// executed or canceled. Each step is the governor's own log (`ProposalQueued`,
/// `ProposalExecuted`, `ProposalCanceled`), the same for OpenZeppelin's Governor with
/// `GovernorTimelockControl` or `GovernorTimelockCompound` and for Compound's GovernorBravo.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none)]
pub struct ProposalExecution {
    /// The governor's `ProposalQueued`: the proposal's actions were scheduled in its timelock.
    pub queued: Option<ProposalExecutionStep>,
    /// The ETA `ProposalQueued` carried, exact decimal text: the time, in seconds since the Unix
    /// epoch on the timelock's clock, from which the timelock executes the proposal
    /// (TimelockController: the operation's ready time, `block.timestamp + getMinDelay()` when
    /// queued; Compound's Timelock: `block.timestamp + delay()`).
    pub eta: Option<String>,
    /// `eta` as a time: from then on the proposal can be executed (the timelock refuses before).
    /// Compare with the chain's latest block time, not a wall clock, to tell whether it is due.
    pub executable_at: Option<Timestamp>,
    /// Where the timelock has a grace period (Compound's Timelock, `GRACE_PERIOD()`, 14 days):
    /// `eta + GRACE_PERIOD`, from when the governor counts a proposal still queued as expired.
    /// Absent for a timelock whose operations never expire (OpenZeppelin's TimelockController).
    pub expires_at: Option<Timestamp>,
    /// Whether the proposal expired unexecuted, as the governor's `state()` said at the data's
    /// time (`state` is `expired`). Present where `expiresAt` is, or where the governor says so.
    pub expired: Option<bool>,
    /// The governor's `ProposalExecuted`: the timelock ran the proposal's actions.
    pub executed: Option<ProposalExecutionStep>,
    /// The governor's `ProposalCanceled`. A TimelockController operation canceled on the timelock
    /// itself makes the governor's state `canceled` without this log.
    pub canceled: Option<ProposalExecutionStep>,
}

/// Where one step of the lifecycle happened on chain: the log's block and transaction.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct ProposalExecutionStep {
    /// The log's block, decimal text.
    pub block_number: String,
    /// The transaction that emitted the log (lowercase 0x hex).
    pub transaction_hash: String,
    /// The block's time.
    pub at: Timestamp,
}

/// The latest time `Timestamp` writes (9999-12-31T23:59:59Z), in seconds.
const LAST_SECOND: u64 = 253_402_300_799;

impl ProposalExecution {
    /// The lifecycle stored for `p`, when its governor recorded any step of it.
    pub async fn load(db: &impl ConnectionTrait, p: &proposal::Model) -> Result<Option<Self>, Problem> {
        let stored = crate::store::executions::of(db, p.id).await.map_err(|e| problem_marking_read_failed(&e))?;
        Ok(stored.map(|e| Self::from_model(&e, p.state)))
    }

    pub fn from_model(e: &proposal_execution::Model, state: ProposalState) -> Self {
        let eta_s = e.eta.as_deref().and_then(|t| t.parse::<u64>().ok()).filter(|s| *s <= LAST_SECOND);
        let expires_s = match (eta_s, e.grace_period_s) {
            (Some(eta), Some(grace)) => u64::try_from(grace).ok().and_then(|g| eta.checked_add(g)),
            _ => None,
        }
        .filter(|s| *s <= LAST_SECOND);
        let expired = match (state, expires_s) {
            (ProposalState::Expired, _) => Some(true),
            (_, Some(_)) => Some(false),
            _ => None,
        };
        Self {
            queued: step(e.queued_block, e.queued_ms, &e.queued_tx),
            eta: e.eta.clone(),
            executable_at: eta_s.map(seconds),
            expires_at: expires_s.map(seconds),
            expired,
            executed: step(e.executed_block, e.executed_ms, &e.executed_tx),
            canceled: step(e.canceled_block, e.canceled_ms, &e.canceled_tx),
        }
    }
}

fn seconds(s: u64) -> Timestamp {
    Timestamp::from_ms(s as i64 * 1000)
}

fn step(block: Option<i64>, ms: Option<i64>, tx: &Option<String>) -> Option<ProposalExecutionStep> {
    Some(ProposalExecutionStep {
        block_number: block?.to_string(),
        transaction_hash: tx.clone()?,
        at: Timestamp::from_ms(ms?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(eta: &str, grace_period_s: Option<i64>) -> proposal_execution::Model {
        proposal_execution::Model {
            proposal_id: 1,
            dao_id: "d".to_owned(),
            queued_block: Some(100),
            queued_ms: Some(1_800_000_000_000),
            queued_tx: Some("0xaa".to_owned()),
            eta: Some(eta.to_owned()),
            grace_period_s,
            executed_block: None,
            executed_ms: None,
            executed_tx: None,
            canceled_block: None,
            canceled_ms: None,
            canceled_tx: None,
        }
    }

    #[test]
    fn a_timelock_controller_queue_never_expires() {
        let e = ProposalExecution::from_model(&queued("1800000060", None), ProposalState::Queued);
        assert_eq!(e.eta.as_deref(), Some("1800000060"));
        assert_eq!(e.executable_at, Some(Timestamp::known("2027-01-15T08:01:00.000Z")));
        assert_eq!((e.expires_at, e.expired), (None, None));
        let q = e.queued.expect("queued");
        assert_eq!((q.block_number.as_str(), q.transaction_hash.as_str()), ("100", "0xaa"));
        assert_eq!(q.at, Timestamp::known("2027-01-15T08:00:00.000Z"));
        assert_eq!((e.executed, e.canceled), (None, None));
    }

    #[test]
    fn a_compound_timelock_queue_expires_after_its_grace_period() {
        let fourteen_days = 14 * 24 * 3600;
        let e = ProposalExecution::from_model(&queued("1800000060", Some(fourteen_days)), ProposalState::Queued);
        assert_eq!(e.expires_at, Some(Timestamp::known("2027-01-29T08:01:00.000Z")));
        assert_eq!(e.expired, Some(false));
        let e = ProposalExecution::from_model(&queued("1800000060", Some(fourteen_days)), ProposalState::Expired);
        assert_eq!(e.expired, Some(true));
    }

    #[test]
    fn an_eta_no_timestamp_can_hold_is_served_as_received_only() {
        let huge = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        let e = ProposalExecution::from_model(&queued(huge, Some(1)), ProposalState::Queued);
        assert_eq!(e.eta.as_deref(), Some(huge));
        assert_eq!((e.executable_at, e.expires_at, e.expired), (None, None, None));
    }
}
