//! Reads the three sample CSVs into validated rows. Pure: no database.
//!
//! A row that fails validation is reported (file, line, reason) and left out whole; nothing is
//! coerced or repaired. Numbers keep the exact text they arrived as.
use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::bail;
use csv::StringRecord;

use super::RowProblem;
use super::registry::{self, RegistryDao};
use crate::contract::dataset::{DELEGATES_FILE, PROPOSALS_FILE, VOTES_FILE};
use crate::contract::decimal;
use crate::contract::vocabulary::{ProposalState, SourceKind};
use crate::store::{address, sort_keys};

const PROPOSAL_COLUMNS: &[&str] = &[
    "symbol",
    "space_id",
    "proposal_id",
    "title",
    "type",
    "state",
    "start",
    "end",
    "votes",
    "scores_total",
    "quorum",
    "top_choice_pct",
    "author",
];
const VOTE_COLUMNS: &[&str] = &["symbol", "proposal_id", "voter", "voting_power", "choice", "created"];
const DELEGATE_COLUMNS: &[&str] = &["symbol", "address", "ens", "name", "votes_count", "delegators_count"];

/// Snapshot proposal states (the hub's `state`).
const SNAPSHOT_STATES: [ProposalState; 3] = [ProposalState::Pending, ProposalState::Active, ProposalState::Closed];

/// All five Tally tokens (AAVE, COMP, UNI, ARB, OP) are 18-decimal ERC-20s.
pub const TALLY_DECIMALS: u32 = 18;

pub struct SampleProposal {
    pub dao: &'static RegistryDao,
    pub space: String,
    pub external_id: String,
    pub title: String,
    pub voting_type: String,
    pub state: ProposalState,
    pub start_ms: i64,
    pub end_ms: i64,
    pub upstream_vote_count: i64,
    pub scores_total: Option<String>,
    pub quorum: Option<String>,
    pub top_choice_pct: Option<String>,
    /// Lowercase.
    pub author: String,
}

pub struct SampleVote {
    pub dao_id: &'static str,
    pub proposal_external_id: String,
    /// Lowercase.
    pub voter: String,
    pub choice: String,
    /// Exact text as received.
    pub voting_power: String,
    pub vp_sort: String,
    pub created_ms: i64,
}

pub struct SampleDelegate {
    pub dao_id: &'static str,
    /// Lowercase.
    pub address: String,
    pub ens: Option<String>,
    pub name: Option<String>,
    pub voting_power_raw: String,
    pub voting_power: String,
    pub vp_sort: String,
    pub delegators_count: Option<i64>,
}

pub struct SampleVoter {
    pub address: String,
    pub first_seen_ms: i64,
    pub ens: Option<String>,
    pub name: Option<String>,
}

pub struct SampleWatermark {
    pub dao_id: &'static str,
    pub source: SourceKind,
    pub data_as_of_ms: i64,
}

/// Everything the sample holds, validated, plus the rows that were not.
pub struct Parsed {
    pub proposals: Vec<SampleProposal>,
    pub votes: Vec<SampleVote>,
    pub delegates: Vec<SampleDelegate>,
    /// Everyone who voted or is a delegate, in address order.
    pub voters: Vec<SampleVoter>,
    pub watermarks: Vec<SampleWatermark>,
    /// The newest timestamp anywhere in the sample (its dataAsOf); `None` for an empty sample.
    pub as_of_ms: Option<i64>,
    pub skipped: Vec<RowProblem>,
}

pub fn parse(proposals: &str, votes: &str, delegates: &str) -> anyhow::Result<Parsed> {
    let mut skipped = Vec::new();
    let proposals = parse_proposals(proposals, &mut skipped)?;
    let votes = parse_votes(votes, &proposals, &mut skipped)?;
    let delegates = parse_delegates(delegates, &mut skipped)?;
    let as_of_ms = newest(&proposals, &votes);
    if as_of_ms.is_none() && !delegates.is_empty() {
        // The Tally export carries no collection time; it is dated by the Snapshot rows beside it.
        bail!("{DELEGATES_FILE} has rows but the Snapshot files have none, so the sample's dataAsOf is unknown");
    }
    let as_of = as_of_ms.unwrap_or_default();
    Ok(Parsed {
        voters: collect_voters(&votes, &delegates, as_of),
        watermarks: watermarks(&proposals, &votes, &delegates, as_of),
        proposals,
        votes,
        delegates,
        as_of_ms,
        skipped,
    })
}

fn parse_proposals(text: &str, skipped: &mut Vec<RowProblem>) -> anyhow::Result<Vec<SampleProposal>> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for_each_row(PROPOSALS_FILE, text, PROPOSAL_COLUMNS, skipped, |fields| {
        let row = proposal(fields)?;
        if !seen.insert(row.external_id.clone()) {
            return Err(format!("duplicate proposal {}", row.external_id));
        }
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

fn proposal(fields: &[&str]) -> Result<SampleProposal, String> {
    let &[
        symbol,
        space,
        id,
        title,
        voting_type,
        state,
        start,
        end,
        votes,
        scores_total,
        quorum,
        top_choice_pct,
        author,
    ] = fields
    else {
        return Err(format!("expected {} columns, found {}", PROPOSAL_COLUMNS.len(), fields.len()));
    };
    let dao = registry::by_space(space).ok_or_else(|| format!("unknown Snapshot space `{space}`"))?;
    check_symbol(symbol, dao)?;
    let Some(&state) = SNAPSHOT_STATES.iter().find(|s| s.as_str() == state) else {
        let known: Vec<&str> = SNAPSHOT_STATES.iter().map(|s| s.as_str()).collect();
        return Err(format!("state `{state}` is not one of {}", known.join(", ")));
    };
    if voting_type.is_empty() {
        return Err("type is empty".into());
    }
    Ok(SampleProposal {
        dao,
        space: space.to_owned(),
        external_id: proposal_id(id)?,
        title: title.to_owned(),
        voting_type: voting_type.to_owned(),
        state,
        start_ms: date_ms("start", start)?,
        end_ms: date_ms("end", end)?,
        upstream_vote_count: count("votes", votes)?,
        scores_total: optional_decimal("scores_total", scores_total)?,
        quorum: optional_decimal("quorum", quorum)?,
        top_choice_pct: optional_decimal("top_choice_pct", top_choice_pct)?,
        author: account("author", author)?,
    })
}

fn parse_votes(
    text: &str,
    proposals: &[SampleProposal],
    skipped: &mut Vec<RowProblem>,
) -> anyhow::Result<Vec<SampleVote>> {
    // Snapshot proposal ids are unique across spaces, so the id alone finds the proposal.
    let by_id: HashMap<&str, &SampleProposal> = proposals.iter().map(|p| (p.external_id.as_str(), p)).collect();
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for_each_row(VOTES_FILE, text, VOTE_COLUMNS, skipped, |fields| {
        let row = vote(fields, &by_id)?;
        if !seen.insert((row.proposal_external_id.clone(), row.voter.clone())) {
            return Err(format!("duplicate vote by {} on proposal {}", row.voter, row.proposal_external_id));
        }
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

fn vote(fields: &[&str], proposals: &HashMap<&str, &SampleProposal>) -> Result<SampleVote, String> {
    let &[symbol, proposal_id, voter, voting_power, choice, created] = fields else {
        return Err(format!("expected {} columns, found {}", VOTE_COLUMNS.len(), fields.len()));
    };
    let proposal = proposals
        .get(proposal_id)
        .ok_or_else(|| format!("unknown proposal `{proposal_id}` (not a valid row of {PROPOSALS_FILE})"))?;
    check_symbol(symbol, proposal.dao)?;
    let (_, vp_sort) = sort_keys::parse_amount(voting_power).map_err(|e| format!("voting_power: {e}"))?;
    if choice.is_empty() {
        return Err("choice is empty".into());
    }
    Ok(SampleVote {
        dao_id: proposal.dao.id,
        proposal_external_id: proposal.external_id.clone(),
        voter: account("voter", voter)?,
        choice: choice.to_owned(),
        voting_power: voting_power.to_owned(),
        vp_sort,
        created_ms: date_ms("created", created)?,
    })
}

fn parse_delegates(text: &str, skipped: &mut Vec<RowProblem>) -> anyhow::Result<Vec<SampleDelegate>> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for_each_row(DELEGATES_FILE, text, DELEGATE_COLUMNS, skipped, |fields| {
        let row = delegate(fields)?;
        if !seen.insert((row.dao_id, row.address.clone())) {
            return Err(format!("duplicate delegate {} for {}", row.address, row.dao_id));
        }
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

fn delegate(fields: &[&str]) -> Result<SampleDelegate, String> {
    let &[symbol, address, ens, name, votes_count, delegators_count] = fields else {
        return Err(format!("expected {} columns, found {}", DELEGATE_COLUMNS.len(), fields.len()));
    };
    let dao = registry::by_tally_symbol(symbol).ok_or_else(|| format!("unknown Tally symbol `{symbol}`"))?;
    let scaled = decimal::scale_down(votes_count, TALLY_DECIMALS)
        .map_err(|_| format!("votes_count `{votes_count}` is not a non-negative integer"))?;
    let vp_sort = sort_keys::sort_key(&scaled).map_err(|e| format!("votes_count: {e}"))?;
    Ok(SampleDelegate {
        dao_id: dao.id,
        address: account("address", address)?,
        ens: non_empty(ens),
        name: non_empty(name),
        voting_power_raw: votes_count.to_owned(),
        voting_power: decimal::plain(&scaled),
        vp_sort,
        delegators_count: match delegators_count {
            "" => None,
            n => Some(count("delegators_count", n)?),
        },
    })
}

/// Voters from votes (first seen at their earliest vote) and delegates (first seen at the
/// sample's dataAsOf unless they also voted). A delegate's ENS name and display name are taken
/// from the first export row that has one.
fn collect_voters(votes: &[SampleVote], delegates: &[SampleDelegate], as_of_ms: i64) -> Vec<SampleVoter> {
    let mut voters: BTreeMap<&str, SampleVoter> = BTreeMap::new();
    for v in votes {
        voters.entry(&v.voter).and_modify(|r| r.first_seen_ms = r.first_seen_ms.min(v.created_ms)).or_insert_with(
            || SampleVoter { address: v.voter.clone(), first_seen_ms: v.created_ms, ens: None, name: None },
        );
    }
    for d in delegates {
        let r = voters.entry(&d.address).or_insert_with(|| SampleVoter {
            address: d.address.clone(),
            first_seen_ms: as_of_ms,
            ens: None,
            name: None,
        });
        r.ens = r.ens.take().or_else(|| d.ens.clone());
        r.name = r.name.take().or_else(|| d.name.clone());
    }
    voters.into_values().collect()
}

/// Snapshot: per DAO, the newest vote or proposal start. Tally: the sample's dataAsOf, because
/// the export carries no collection time of its own.
fn watermarks(
    proposals: &[SampleProposal],
    votes: &[SampleVote],
    delegates: &[SampleDelegate],
    as_of_ms: i64,
) -> Vec<SampleWatermark> {
    let mut snapshot: BTreeMap<&'static str, i64> = BTreeMap::new();
    let dated = proposals.iter().map(|p| (p.dao.id, p.start_ms)).chain(votes.iter().map(|v| (v.dao_id, v.created_ms)));
    for (dao_id, ms) in dated {
        let newest = snapshot.entry(dao_id).or_insert(ms);
        *newest = (*newest).max(ms);
    }
    let tally: BTreeMap<&'static str, i64> = delegates.iter().map(|d| (d.dao_id, as_of_ms)).collect();
    let rows = |source: SourceKind, map: BTreeMap<&'static str, i64>| {
        map.into_iter().map(move |(dao_id, data_as_of_ms)| SampleWatermark { dao_id, source, data_as_of_ms })
    };
    rows(SourceKind::Snapshot, snapshot).chain(rows(SourceKind::Tally, tally)).collect()
}

fn newest(proposals: &[SampleProposal], votes: &[SampleVote]) -> Option<i64> {
    proposals.iter().map(|p| p.start_ms).chain(votes.iter().map(|v| v.created_ms)).max()
}

/// Feeds each data row of `text` to `row`, which also checks the column count. Rows the CSV
/// reader cannot read and rows `row` rejects go to `skipped` with their 1-based line (header =
/// line 1).
/// A header other than `columns` fails the whole file: it means a different export format.
fn for_each_row(
    file: &'static str,
    text: &str,
    columns: &[&str],
    skipped: &mut Vec<RowProblem>,
    mut row: impl FnMut(&[&str]) -> Result<(), String>,
) -> anyhow::Result<()> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let header = reader.headers()?.clone();
    if !header.iter().eq(columns.iter().copied()) {
        bail!("{file}: header is `{}`, expected `{}`", header.iter().collect::<Vec<_>>().join(","), columns.join(","));
    }
    for record in reader.records() {
        let (line, outcome) = match record {
            Ok(record) => (line_of(&record), row(&record.iter().collect::<Vec<_>>())),
            Err(e) => (e.position().map_or(0, |p| p.line()), Err(format!("unreadable CSV row: {e}"))),
        };
        if let Err(reason) = outcome {
            tracing::warn!(file, line, %reason, "skipping malformed sample row");
            skipped.push(RowProblem { file: file.to_owned(), line, reason });
        }
    }
    Ok(())
}

fn line_of(record: &StringRecord) -> u64 {
    record.position().map_or(0, |p| p.line())
}

fn check_symbol(symbol: &str, dao: &RegistryDao) -> Result<(), String> {
    if symbol != dao.symbol {
        return Err(format!("symbol `{symbol}` does not match {} (expected `{}`)", dao.id, dao.symbol));
    }
    Ok(())
}

/// Snapshot ids are `0x` hex or IPFS CIDs: alphanumeric either way. Kept exactly as given.
fn proposal_id(id: &str) -> Result<String, String> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("proposal_id `{id}` is not a Snapshot proposal id"));
    }
    Ok(id.to_owned())
}

fn account(column: &str, text: &str) -> Result<String, String> {
    address::normalize(text).map_err(|e| format!("{column}: {e}"))
}

/// `YYYY-MM-DD` → epoch milliseconds at 00:00 UTC.
fn date_ms(column: &str, text: &str) -> Result<i64, String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(text, &format)
        .ok()
        .filter(|_| text.len() == 10)
        .ok_or_else(|| format!("{column}: `{text}` is not a date (YYYY-MM-DD)"))?;
    Ok(date.midnight().assume_utc().unix_timestamp() * 1000)
}

/// A non-negative integer written in plain digits.
fn count(column: &str, text: &str) -> Result<i64, String> {
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse::<i64>().ok())
        .flatten()
        .ok_or_else(|| format!("{column}: `{text}` is not a non-negative integer"))
}

/// Empty means "not given"; otherwise the text must be a decimal and is kept verbatim.
fn optional_decimal(column: &str, text: &str) -> Result<Option<String>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    decimal::parse(text).map_err(|e| format!("{column}: {e}"))?;
    Ok(Some(text.to_owned()))
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_midnight_utc() {
        assert_eq!(date_ms("d", "1970-01-02"), Ok(86_400_000));
        assert_eq!(date_ms("d", "2025-12-03"), Ok(1_764_720_000_000));
        for bad in ["2025-13-01", "2025-1-1", "03/12/2025", "", "2025-12-03T00:00"] {
            assert!(date_ms("d", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn counts_are_plain_digits() {
        assert_eq!(count("n", "133"), Ok(133));
        for bad in ["", "-1", "1.0", "1e3", " 1", "99999999999999999999"] {
            assert!(count("n", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wrong_column_counts_and_headers_are_reported() {
        let mut skipped = Vec::new();
        let text = "symbol,address,ens,name,votes_count,delegators_count\nAAVE,0x4da27a545c0c5B758a6BA100e3a049001de870f5,,,1,2\nAAVE,0x4da27a545c0c5B758a6BA100e3a049001de870f5\n";
        let rows = parse_delegates(text, &mut skipped).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(skipped.len(), 1);
        assert_eq!((skipped[0].line, skipped[0].reason.as_str()), (3, "expected 6 columns, found 2"));
        assert!(parse_delegates("a,b\n1,2\n", &mut skipped).is_err());
    }
}
