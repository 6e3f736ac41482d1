//! Proposals as the governor sees them: its view of each one (state, tallies, quorum, voting
//! window), staged as a new proposal when a run saw it created and as an update otherwise.
use std::collections::BTreeSet;

use alloy_primitives::{B256, U256};
use anyhow::Context;

use super::abi::*;
use super::connector::Modes;
use super::rpc::{BlockTimes, u64_of};
use super::{GovernorConnector, lower};
use crate::contract::vocabulary::{ProposalSource, ProposalState};
use crate::ingest::Sink;
use crate::store::staging::{ProposalRecord, ProposalRef, ProposalUpdate, Record};

pub const ORIGIN: &str = "governor-logs";
/// Simple counting: Against = 0, For = 1, Abstain = 2. A vote's choice is `support + 1`, so it
/// indexes these labels from 1 as Snapshot choices do.
pub const CHOICES: [&str; 3] = ["Against", "For", "Abstain"];

/// A proposal first seen in this run, completed with the governor's view before staging.
pub(super) struct Created {
    pub(super) event: ProposalCreated,
    pub(super) block: u64,
    pub(super) tx: B256,
}

/// The governor's current view of one proposal; `None` where the governor does not say
/// (GovernorBravo has no `proposalVotes`, a quorum is only defined once voting started).
#[derive(Debug, Default)]
struct View {
    state: Option<ProposalState>,
    scores: Option<Vec<String>>,
    total: Option<String>,
    quorum: Option<String>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

impl GovernorConnector {
    async fn view(&self, id: U256, head: u64, times: &mut BlockTimes) -> anyhow::Result<View> {
        let mut view = View::default();
        let state = self.call(stateCall { proposalId: id }).await.context("governor.state")?;
        view.state = STATES.get(state as usize).copied();
        if let Ok(votes) = self.call(proposalVotesCall { proposalId: id }).await {
            let scores = [votes.againstVotes, votes.forVotes, votes.abstainVotes];
            view.total = Some(scores.iter().fold(U256::ZERO, |a, b| a.saturating_add(*b)).to_string());
            view.scores = Some(scores.iter().map(U256::to_string).collect());
        }
        if let Ok(snapshot) = self.call(proposalSnapshotCall { proposalId: id }).await {
            let snapshot = u64_of(snapshot)?;
            if snapshot < head {
                view.start_ms = Some(times.get(self, snapshot).await?);
                view.quorum =
                    self.call(quorumCall { timepoint: U256::from(snapshot) }).await.ok().map(|q| q.to_string());
            }
        }
        if let Ok(deadline) = self.call(proposalDeadlineCall { proposalId: id }).await {
            let deadline = u64_of(deadline)?;
            if deadline <= head {
                view.end_ms = Some(times.get(self, deadline).await?);
            }
        }
        Ok(view)
    }

    fn proposal(&self, c: Created, view: View, created_ms: i64, modes: &Modes) -> ProposalRecord {
        let e = c.event;
        let description = e.description;
        ProposalRecord {
            dao_id: self.dao_id.clone(),
            source: ProposalSource::Onchain,
            external_id: e.proposalId.to_string(),
            title: title(&description),
            body: Some(description),
            author: lower(e.proposer),
            voting_type: Some("governor".to_owned()),
            state: view.state.unwrap_or(ProposalState::Pending),
            choices: Some(CHOICES.iter().map(|c| (*c).to_owned()).collect()),
            scores: view.scores,
            scores_total: view.total,
            scores_state: None,
            quorum: view.quorum,
            start_ms: view.start_ms,
            end_ms: view.end_ms,
            created_ms,
            upstream_vote_count: None,
            url: None,
            discussion_url: None,
            ipfs: None,
            snapshot_block: Some(e.voteStart.to_string()),
            tx_hash: Some(format!("{:#x}", c.tx)),
            block_number: Some(c.block as i64),
            counting_mode: modes.counting.clone(),
            clock_mode: modes.clock.clone(),
            privacy: None,
            origin: ORIGIN.to_owned(),
        }
    }

    /// Stages the governor's view of each proposal: those created in the run as new proposals,
    /// those of `updated` (which earlier runs stored) as updates. Returns each one's state, where
    /// the governor gave one.
    pub(super) async fn stage_proposals(
        &self,
        created: Vec<Created>,
        updated: BTreeSet<U256>,
        head: u64,
        modes: &Modes,
        times: &mut BlockTimes,
        sink: &mut Sink<'_>,
    ) -> anyhow::Result<Vec<(U256, Option<ProposalState>)>> {
        let mut states = Vec::new();
        for c in created {
            let view = self.view(c.event.proposalId, head, times).await?;
            states.push((c.event.proposalId, view.state));
            let at = times.get(self, c.block).await?;
            sink.push(Record::Proposal(Box::new(self.proposal(c, view, at, modes)))).await?;
        }
        for id in updated {
            let view = self.view(id, head, times).await?;
            states.push((id, view.state));
            sink.push(Record::ProposalUpdate(ProposalUpdate {
                dao_id: self.dao_id.clone(),
                proposal: ProposalRef { source: ProposalSource::Onchain, external_id: id.to_string() },
                state: view.state,
                scores: view.scores.clone(),
                scores_total: view.total.clone(),
                quorum: view.quorum.clone(),
                start_ms: view.start_ms,
                end_ms: view.end_ms,
                counting_mode: modes.counting.clone(),
                clock_mode: modes.clock.clone(),
            }))
            .await?;
        }
        Ok(states)
    }
}

/// A proposal's title: the first non-empty line of its description, without Markdown heading marks.
fn title(description: &str) -> String {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let line = line.trim_start_matches('#').trim();
    let mut title: String = line.chars().take(200).collect();
    if title.is_empty() {
        title = "(untitled)".to_owned();
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(title("# Proposal A\nFund the test grants program."), "Proposal A");
        assert_eq!(title("\n\n  Plain title  \nbody"), "Plain title");
        assert_eq!(title(""), "(untitled)");
    }
}
