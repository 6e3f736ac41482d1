//! Curated governance signals: their kinds, severities and rules, each rule with its thresholds,
//! declared once. The rule engine (`store::signals`) reads the thresholds from here; the endpoint
//! (`GET /v1/governance-signals`) publishes each rule's definition, built from the same constants,
//! in the document (the `kind` parameter) and in every signal it returns (`rule`).
//!
//! Every rule works on data time, never on the wall clock: "time left" is measured from the data
//! revision's `dataAsOf`, and a signal's `detectedAt` is the data time that triggered it.
use poem_openapi::Enum;

use super::vocabulary::vocabulary;

/// One hour in milliseconds.
const HOUR_MS: i64 = 3_600_000;

/// `close_race`: the margin between the two leading choices, as a share of the counted power,
/// must be strictly below this to be a close race.
pub const CLOSE_RACE_MAX_MARGIN_SHARE: &str = "0.05";
/// `close_race` on an active proposal: evaluated once at most this much voting time is left.
pub const CLOSE_RACE_WINDOW_MS: i64 = 48 * HOUR_MS;
/// `quorum_at_risk`: upstream `scores_total` strictly below this share of the quorum...
pub const QUORUM_AT_RISK_MAX_SHARE: &str = "0.8";
/// ...while at most this much voting time is left (and some is).
pub const QUORUM_AT_RISK_WINDOW_MS: i64 = 48 * HOUR_MS;
/// `unusual_turnout`: upstream vote count at least this many times the DAO's median, or at most
/// the median divided by it.
pub const UNUSUAL_TURNOUT_FACTOR: &str = "3";
/// `unusual_turnout`: earlier closed proposals of the DAO needed for a median.
pub const UNUSUAL_TURNOUT_MIN_HISTORY: u64 = 5;
/// `new_author`: earlier proposals of the DAO held before a first proposal counts as new (so the
/// first proposals of a dataset are not all "new authors").
pub const NEW_AUTHOR_MIN_PRIOR_PROPOSALS: u64 = 5;
/// `forum_discussion_spike`: posts on one topic within [`FORUM_SPIKE_WINDOW_MS`].
pub const FORUM_SPIKE_MIN_POSTS: u64 = 20;
/// `forum_discussion_spike`: the sliding window.
pub const FORUM_SPIKE_WINDOW_MS: i64 = 24 * HOUR_MS;

vocabulary! {
    /// The kind of a signal: one per rule.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    SignalKind ("signal kind") {
        /// The two leading choices are within a small margin at the deadline.
        CloseRace = "close_race",
        /// The upstream score total reached the proposal's quorum.
        QuorumReached = "quorum_reached",
        /// An active proposal is well below its quorum close to its deadline.
        QuorumAtRisk = "quorum_at_risk",
        /// One vote decided the outcome (the margin or the quorum).
        SingleVoterDecisive = "single_voter_decisive",
        /// A proposal's vote count is far from the DAO's median.
        UnusualTurnout = "unusual_turnout",
        /// A closed proposal passed.
        ProposalPassed = "proposal_passed",
        /// A closed proposal failed.
        ProposalFailed = "proposal_failed",
        /// An author's first proposal in the DAO.
        NewAuthor = "new_author",
        /// Many forum posts on one topic within a short window.
        ForumDiscussionSpike = "forum_discussion_spike",
    }
}

vocabulary! {
    /// How much attention a signal deserves. Ordered: `info` < `notice` < `warning` < `critical`.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    Severity ("severity") {
        /// A fact worth recording (quorum reached, a proposal passed, a new author).
        Info = "info",
        /// Worth a look (a failure, unusual turnout, a discussion spike).
        Notice = "notice",
        /// The outcome is fragile (a close race, a single decisive voter).
        Warning = "warning",
        /// Action may be needed before the deadline (quorum at risk).
        Critical = "critical",
    }
}

/// One named threshold of a rule, as an exact decimal string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threshold {
    /// camelCase name, as published in `rule.thresholds`.
    pub name: &'static str,
    pub value: String,
}

impl SignalKind {
    /// Every signal of a kind has this severity.
    pub const fn severity(self) -> Severity {
        match self {
            Self::QuorumReached | Self::ProposalPassed | Self::NewAuthor => Severity::Info,
            Self::UnusualTurnout | Self::ProposalFailed | Self::ForumDiscussionSpike => Severity::Notice,
            Self::CloseRace | Self::SingleVoterDecisive => Severity::Warning,
            Self::QuorumAtRisk => Severity::Critical,
        }
    }

    /// The rule's thresholds (durations in milliseconds).
    pub fn thresholds(self) -> Vec<Threshold> {
        let t = |name, value: String| Threshold { name, value };
        match self {
            Self::CloseRace => vec![
                t("maxMarginShare", CLOSE_RACE_MAX_MARGIN_SHARE.to_owned()),
                t("windowMs", CLOSE_RACE_WINDOW_MS.to_string()),
            ],
            Self::QuorumAtRisk => vec![
                t("maxQuorumShare", QUORUM_AT_RISK_MAX_SHARE.to_owned()),
                t("windowMs", QUORUM_AT_RISK_WINDOW_MS.to_string()),
            ],
            Self::UnusualTurnout => vec![
                t("factor", UNUSUAL_TURNOUT_FACTOR.to_owned()),
                t("minHistory", UNUSUAL_TURNOUT_MIN_HISTORY.to_string()),
            ],
            Self::NewAuthor => vec![t("minPriorProposals", NEW_AUTHOR_MIN_PRIOR_PROPOSALS.to_string())],
            Self::ForumDiscussionSpike => {
                vec![t("minPosts", FORUM_SPIKE_MIN_POSTS.to_string()), t("windowMs", FORUM_SPIKE_WINDOW_MS.to_string())]
            }
            Self::QuorumReached | Self::SingleVoterDecisive | Self::ProposalPassed | Self::ProposalFailed => vec![],
        }
    }

    /// The rule in words, with its thresholds.
    pub fn definition(self) -> String {
        let hours = |ms: i64| ms / HOUR_MS;
        let complete = "computed exactly from the ingested votes, and only when the store holds every upstream vote \
                        of the proposal";
        let pair = "the two leading choices (For and Against for `basic` proposals, where choices 1/2/3 are \
                    For/Against/Abstain and Abstain decides nothing; the top two choices by score otherwise; never \
                    ranked-choice, whose first preferences do not decide it)";
        match self {
            Self::CloseRace => format!(
                "The margin between {pair} is below {CLOSE_RACE_MAX_MARGIN_SHARE} of the counted power (For + Against \
                 for `basic`, the sum of all choice scores otherwise), {complete}. Closed proposals: the final tally, \
                 detected at the end. Active proposals: once at most {} hours of voting are left as of `dataAsOf`, \
                 detected at `dataAsOf`.",
                hours(CLOSE_RACE_WINDOW_MS)
            ),
            Self::QuorumReached => "The proposal has a quorum above zero and its upstream `scores_total` is at least \
                                    the quorum (exact decimal comparison). Detected at the end for closed proposals, at \
                                    `dataAsOf` for active ones."
                .to_owned(),
            Self::QuorumAtRisk => format!(
                "An active proposal with a quorum above zero whose upstream `scores_total` is below \
                 {QUORUM_AT_RISK_MAX_SHARE} of the quorum while more than 0 and at most {} hours of voting are left \
                 as of `dataAsOf`. Detected at `dataAsOf`.",
                hours(QUORUM_AT_RISK_WINDOW_MS)
            ),
            Self::SingleVoterDecisive => format!(
                "One ingested vote decided the outcome: either (margin) what it gave the leading choice minus what \
                 it gave the runner-up exceeds the margin between {pair}, {complete}, so without it the runner-up \
                 would lead; or (quorum) the quorum (above zero) was reached and the upstream `scores_total` minus \
                 that vote's power is below the quorum. The largest such vote is cited. Detected at the end for \
                 closed proposals, at `dataAsOf` for active ones."
            ),
            Self::UnusualTurnout => format!(
                "A closed proposal's upstream vote count is at least {UNUSUAL_TURNOUT_FACTOR} times, or at most \
                 1/{UNUSUAL_TURNOUT_FACTOR} of, the median upstream vote count of the DAO's closed proposals that \
                 started earlier; needs at least {UNUSUAL_TURNOUT_MIN_HISTORY} such proposals and a median above \
                 zero. Detected at the end."
            ),
            Self::ProposalPassed => format!(
                "A closed `basic` proposal whose quorum (if above zero) was reached and whose For score exceeds its \
                 Against score, {complete}. Other voting types have no pass rule on Snapshot and never produce this \
                 signal. Detected at the end."
            ),
            Self::ProposalFailed => format!(
                "A closed proposal of any voting type whose quorum, above zero, was not reached (upstream \
                 `scores_total` below the quorum); or a closed `basic` proposal whose Against score is at least its \
                 For score, {complete}. Detected at the end."
            ),
            Self::NewAuthor => format!(
                "The first proposal of an author (lowercase address) in a DAO among the proposals held, once the DAO \
                 has at least {NEW_AUTHOR_MIN_PRIOR_PROPOSALS} earlier proposals (ordered by creation time, then \
                 external id). Detected at the proposal's creation."
            ),
            Self::ForumDiscussionSpike => format!(
                "A forum topic received at least {FORUM_SPIKE_MIN_POSTS} posts within {} hours. One signal per \
                 topic, detected at the post that first brought a {}-hour window to {FORUM_SPIKE_MIN_POSTS} posts.",
                hours(FORUM_SPIKE_WINDOW_MS),
                hours(FORUM_SPIKE_WINDOW_MS)
            ),
        }
    }
}

/// Every rule, one line each: `name` (severity): definition. For the document.
pub fn rules_text() -> String {
    SignalKind::ALL
        .iter()
        .map(|k| format!("- `{}` ({}): {}", k.as_str(), k.severity().as_str(), k.definition()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_severities_round_trip() {
        for &k in SignalKind::ALL {
            assert_eq!(SignalKind::parse(k.as_str()), Ok(k));
            assert!(!k.definition().is_empty());
        }
        for &s in Severity::ALL {
            assert_eq!(Severity::parse(s.as_str()), Ok(s));
        }
        assert!(SignalKind::parse("close-race").is_err());
    }

    #[test]
    fn definitions_state_the_thresholds() {
        assert!(SignalKind::CloseRace.definition().contains("below 0.05 of the counted power"));
        assert!(SignalKind::CloseRace.definition().contains("48 hours"));
        assert!(SignalKind::ForumDiscussionSpike.definition().contains("at least 20 posts within 24 hours"));
        assert!(rules_text().lines().count() == SignalKind::ALL.len());
    }
}
