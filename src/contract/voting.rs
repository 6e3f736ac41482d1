//! Snapshot's voting types, declared once: how Snapshot scores each (its `snapshot.js`
//! `src/voting/*.ts`), and what the store's own tally of the votes it holds is for each
//! (`rules::tally`). The documents list them (`{{VOTING_TYPES}}`), a v2 proposal carries its
//! type's rule (`votingRule`), a brief's tally says its method, and the signal rules judge a race
//! only on a tally that decides the outcome.
use poem_openapi::Enum;

use super::vocabulary::vocabulary;

vocabulary! {
    /// What the store's tally of the votes it holds is, per choice.
    #[derive(Enum)]
    #[oai(rename_all = "snake_case")]
    TallyMethod ("tally method") {
        /// Each choice's score is the exact sum of the power given to it, as Snapshot scores it
        /// (approval: a vote's full power to each approved choice; weighted: power split by weights).
        Sum = "sum",
        /// Each choice's score is the power of the votes that rank it first: what a ranked ballot
        /// gives outright, not the outcome (ranked-choice runs instant-runoff rounds, copeland
        /// pairwise contests). The outcome is the upstream's `scores`.
        FirstPreferences = "first_preferences",
        /// Each choice's score is the power allocated to it by the vote's weights, exactly; Snapshot's
        /// quadratic score squares sums of square roots, which no exact decimal can carry. The
        /// outcome is the upstream's `scores`.
        AllocatedPower = "allocated_power",
    }
}

impl TallyMethod {
    /// Whether the store's tally is the result (the signal rules judge races only on these).
    pub const fn decides(self) -> bool {
        matches!(self, Self::Sum)
    }
}

/// One Snapshot voting type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VotingType {
    /// As Snapshot names it (`proposal.type`).
    pub name: &'static str,
    /// How Snapshot scores it, in one sentence.
    pub rule: &'static str,
    /// What the store's tally of the held votes is.
    pub tally: TallyMethod,
}

pub const VOTING_TYPES: &[VotingType] = &[
    VotingType {
        name: "single-choice",
        rule: "Each vote gives its full voting power to one choice; a choice's score is the sum.",
        tally: TallyMethod::Sum,
    },
    VotingType {
        name: "basic",
        rule: "Single choice among For (1), Against (2) and Abstain (3); For against Against decides, Abstain \
               counts toward the quorum only.",
        tally: TallyMethod::Sum,
    },
    VotingType {
        name: "approval",
        rule: "Each vote approves any number of choices and gives its full voting power to each; scores sum to \
               more than the power cast.",
        tally: TallyMethod::Sum,
    },
    VotingType {
        name: "weighted",
        rule: "Each vote splits its voting power across choices in proportion to its weights ({\"1\": 1, \"2\": \
               3} gives a quarter and three quarters).",
        tally: TallyMethod::Sum,
    },
    VotingType {
        name: "quadratic",
        rule: "Each vote splits its power by its weights; a choice's score is the square of the sum over votes \
               of the square roots of what each gave it, rescaled so the scores sum to the power cast.",
        tally: TallyMethod::AllocatedPower,
    },
    VotingType {
        name: "ranked-choice",
        rule: "Each vote ranks the choices; instant runoff: the choice with the fewest first preferences is \
               eliminated and its votes pass to their next preference until one choice holds a majority.",
        tally: TallyMethod::FirstPreferences,
    },
    VotingType {
        name: "copeland",
        rule: "Each vote ranks every choice; every pair of choices is a contest won by the one more power ranks \
               higher (a tie gives each half a point); a choice's score is its points rescaled so the scores sum \
               to the power cast.",
        tally: TallyMethod::FirstPreferences,
    },
];

/// The declaration of the voting type `name`; `None` for on-chain proposals and unknown types.
pub fn voting_type(name: Option<&str>) -> Option<&'static VotingType> {
    let name = name?;
    VOTING_TYPES.iter().find(|t| t.name == name)
}

/// The store's tally method for a voting type: a sum unless declared otherwise (on-chain
/// governors count For/Against/Abstain sums).
pub fn tally_method(name: Option<&str>) -> TallyMethod {
    voting_type(name).map_or(TallyMethod::Sum, |t| t.tally)
}

/// Every voting type, one line each, for the documents.
pub fn voting_types_text() -> String {
    VOTING_TYPES.iter().map(|t| format!("`{}`: {}", t.name, t.rule)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_declared_once() {
        let names: std::collections::BTreeSet<&str> = VOTING_TYPES.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), VOTING_TYPES.len());
        assert_eq!(names.len(), 7, "Snapshot's seven voting types");
        assert_eq!(tally_method(Some("copeland")), TallyMethod::FirstPreferences);
        assert_eq!(tally_method(Some("quadratic")), TallyMethod::AllocatedPower);
        assert_eq!(tally_method(None), TallyMethod::Sum);
        assert!(!TallyMethod::FirstPreferences.decides() && TallyMethod::Sum.decides());
    }
}
