//! Stored rows as the rules read them. `rules` knows no database and no entities, so every
//! conversion from what the store reads to a `rules::signals` input is here, in one place.
use sea_orm::{DbErr, FromQueryResult, QueryResult};

use super::entities::vote;
use crate::rules::signals::{ProposalInput, TopicInput, VoteInput};

// Read from the columns of the same names.
impl FromQueryResult for ProposalInput {
    fn from_query_result(row: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Self {
            id: row.try_get(pre, "id")?,
            dao_id: row.try_get(pre, "dao_id")?,
            source: row.try_get(pre, "source")?,
            external_id: row.try_get(pre, "external_id")?,
            title: row.try_get(pre, "title")?,
            author: row.try_get(pre, "author")?,
            voting_type: row.try_get(pre, "voting_type")?,
            // Parsed as its enum (`store::stored`): an unknown state fails the read.
            // Parsed as its enum (`store::stored`): an unknown state fails the read.
            state: row.try_get(pre, "state")?,
            // Parsed as its JSON list (`store::stored`): text that is no list of strings fails the read.
            choices: row.try_get::<Option<super::stored::Choices>>(pre, "choices")?.map(|c| c.0),
            scores_total: row.try_get(pre, "scores_total")?,
            quorum: row.try_get(pre, "quorum")?,
            start_ms: row.try_get(pre, "start_ms")?,
            end_ms: row.try_get(pre, "end_ms")?,
            created_ms: row.try_get(pre, "created_ms")?,
            upstream_vote_count: row.try_get(pre, "upstream_vote_count")?,
            ingested_vote_count: row.try_get(pre, "ingested_vote_count")?,
            url: row.try_get(pre, "url")?,
            ipfs: row.try_get(pre, "ipfs")?,
            tx_hash: row.try_get(pre, "tx_hash")?,
            block_number: row.try_get(pre, "block_number")?,
        })
    }
}

impl FromQueryResult for TopicInput {
    fn from_query_result(row: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Self {
            id: row.try_get(pre, "id")?,
            dao_id: row.try_get(pre, "dao_id")?,
            external_id: row.try_get(pre, "external_id")?,
            title: row.try_get(pre, "title")?,
            url: row.try_get(pre, "url")?,
        })
    }
}

// A stored vote, as the rules weigh it.
impl From<vote::Model> for VoteInput {
    fn from(v: vote::Model) -> Self {
        Self {
            proposal_id: v.proposal_id,
            voter: v.voter.lower(),
            choice: v.choice,
            voting_power: v.voting_power,
            created_ms: v.created_ms,
            ipfs: v.ipfs,
            tx_hash: v.tx_hash,
            block_number: v.block_number,
        }
    }
}
