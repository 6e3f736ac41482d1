//! Fixtures of the rules' tests: a proposal, its votes, a DAO's history, and running one rule.
use bigdecimal::BigDecimal;

use super::{DaoContext, Desired, Proposal, ProposalInput, Rule, VoteFacts, VoteInput, analyse_votes, dao_contexts};
use crate::contract::decimal;
use crate::contract::vocabulary::{ProposalSource, ProposalState};

pub const H: i64 = 3_600_000;
/// The fixture proposal's end.
pub const END: i64 = 1_000 * H;

/// A proposal of `testdao` created and started 100 hours before [`END`], without votes.
pub fn proposal(voting_type: &str, state: &str, scores_total: &str, quorum: &str) -> ProposalInput {
    ProposalInput {
        id: 1,
        dao_id: "testdao".to_owned(),
        source: ProposalSource::Snapshot,
        external_id: "0xp".to_owned(),
        title: "T".to_owned(),
        author: "0xauthor".to_owned(),
        voting_type: Some(voting_type.to_owned()),
        state: ProposalState::parse(state).expect("a proposal state"),
        choices: None,
        scores_total: Some(scores_total.to_owned()),
        quorum: Some(quorum.to_owned()),
        start_ms: Some(END - 100 * H),
        end_ms: Some(END),
        created_ms: END - 100 * H,
        upstream_vote_count: None,
        ingested_vote_count: 0,
        url: Some("https://snapshot.box/#/s:test.eth/proposal/0xp".to_owned()),
        ipfs: None,
        tx_hash: None,
        block_number: None,
    }
}

/// A vote on the fixture proposal, an hour before its end.
pub fn vote(voter: &str, choice: &str, power: &str) -> VoteInput {
    VoteInput {
        proposal_id: 1,
        voter: voter.to_owned(),
        choice: choice.to_owned(),
        voting_power: power.to_owned(),
        created_ms: END - H,
        ipfs: None,
        tx_hash: None,
        block_number: None,
    }
}

/// `p` holding `votes` (voter, choice, power), every upstream vote among them, and what the
/// votes say (nothing without votes).
pub fn with_votes(p: &ProposalInput, votes: &[(&str, &str, &str)]) -> (ProposalInput, Option<VoteFacts>) {
    let votes: Vec<VoteInput> = votes.iter().map(|(v, c, w)| vote(v, c, w)).collect();
    let mut p = p.clone();
    p.upstream_vote_count = Some(votes.len() as i64);
    p.ingested_vote_count = votes.len() as i64;
    let facts = (!votes.is_empty()).then(|| analyse_votes(&p, &votes));
    (p, facts)
}

/// What `rule` says of `p` with `votes` at `as_of`, `p` being its DAO's first proposal.
pub fn eval_at(rule: Rule, p: &ProposalInput, votes: &[(&str, &str, &str)], as_of: i64) -> Option<Desired> {
    let (p, facts) = with_votes(p, votes);
    rule(&Proposal::new(&p, facts.as_ref(), &DaoContext::default(), as_of))
}

/// [`eval_at`] an hour after the fixture's end.
pub fn eval(rule: Rule, p: &ProposalInput, votes: &[(&str, &str, &str)]) -> Option<Desired> {
    eval_at(rule, p, votes, END + H)
}

/// For `f`, Against `a` spread over ten voters each (none decisive on its own).
pub fn race(f: &str, a: &str) -> Vec<(String, &'static str, String)> {
    let (f, a) = (decimal::parse(f).unwrap(), decimal::parse(a).unwrap());
    let mut out = Vec::new();
    for i in 0..10 {
        out.push((format!("0xf{i}"), "1", decimal::plain(&(&f / BigDecimal::from(10)))));
        out.push((format!("0xa{i}"), "2", decimal::plain(&(&a / BigDecimal::from(10)))));
    }
    out
}

/// `votes` as the fixtures take them.
pub fn borrow<'a>(votes: &'a [(String, &'static str, String)]) -> Vec<(&'a str, &'a str, &'a str)> {
    votes.iter().map(|(v, c, w)| (v.as_str(), *c, w.as_str())).collect()
}

/// Closed proposals of one DAO, one an hour, with these upstream vote counts and authors.
pub fn history(counts: &[i64], authors: &[&str]) -> Vec<ProposalInput> {
    counts
        .iter()
        .zip(authors)
        .enumerate()
        .map(|(i, (n, a))| {
            let mut p = proposal("basic", "closed", "1", "0");
            p.id = i as i64 + 1;
            p.external_id = format!("0x{i:02}");
            p.author = (*a).to_owned();
            p.start_ms = Some(i as i64 * H);
            p.created_ms = i as i64 * H;
            p.upstream_vote_count = Some(*n);
            p
        })
        .collect()
}

/// What `rule` says of the last proposal of `ps` (one DAO, in order), given the ones before it.
pub fn eval_last(rule: Rule, ps: &[ProposalInput]) -> Option<Desired> {
    let ctx = dao_contexts(ps);
    let last = ps.len() - 1;
    rule(&Proposal::new(&ps[last], None, &ctx[last], END))
}
