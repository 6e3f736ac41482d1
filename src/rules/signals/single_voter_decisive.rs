//! `single_voter_decisive`: one vote decided the outcome, by the margin (its effect on the race
//! between the two leading choices exceeds the margin, in a complete tally) or by the quorum
//! (without it the score total would fall below the quorum).
use bigdecimal::BigDecimal;

use super::{Desired, Proposal, VoteEvidence, dec, vote_citation};
use crate::contract::decimal;
use crate::contract::signals::SignalKind;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    let f = p.facts.filter(|_| p.closed || p.active)?;
    // The score total without `power`, when that loses a quorum that was reached.
    let quorum_without = |power: &BigDecimal| match (&p.scores_total, &p.quorum) {
        (Some(st), Some(q)) if st >= q => Some(st - power).filter(|rest| rest < q),
        _ => None,
    };
    // The margin needs the whole tally and a leader; the vote that moved the race most is the
    // only one that can exceed it.
    let by_margin = p
        .complete()
        .and_then(|f| Some((f.pair.as_ref()?, f.most_effective.as_ref()?)))
        .filter(|(pair, (_, effect))| pair.leader.is_some() && *effect > pair.margin);
    let (v, effect, by, without) = match by_margin {
        Some((_, (v, effect))) => {
            let power = decimal::parse(&v.voting_power).unwrap_or_default();
            let mut by = vec!["margin".to_owned()];
            let without = quorum_without(&power);
            if without.is_some() {
                by.push("quorum".to_owned());
            }
            Some((v, Some(effect.clone()), by, without))
        }
        // Otherwise the largest vote is the one whose absence costs the quorum first.
        None => f.largest.as_ref().and_then(|v| {
            let power = decimal::parse(&v.voting_power).ok()?;
            let without = quorum_without(&power)?;
            Some((v, None, vec!["quorum".to_owned()], Some(without)))
        }),
    }?;
    let mut e = p.with_quorum(p.evidence(SignalKind::SingleVoterDecisive));
    if by.contains(&"margin".to_owned()) {
        e = p.with_tally(e, f);
    }
    e.decided_by = Some(by.clone());
    e.deciding_vote = Some(VoteEvidence {
        voter: v.voter.clone(),
        voting_power: v.voting_power.clone(),
        choice: v.choice.clone(),
        effect: effect.as_ref().map(dec),
        created_ms: v.created_ms,
    });
    e.scores_total_without_vote = without.as_ref().map(dec);
    e.citations.push(vote_citation(p.row, v));
    let power = decimal::parse(&v.voting_power).map(|d| dec(&d)).unwrap_or_else(|_| v.voting_power.clone());
    let mut reasons = Vec::new();
    if let (Some(effect), Some(pair)) = (&effect, f.pair.as_ref()) {
        reasons.push(format!(
            "its effect {} on the race exceeds the margin {} between {} and {}",
            dec(effect),
            dec(&pair.margin),
            p.name(pair.first),
            p.name(pair.second)
        ));
    }
    if let (Some(rest), Some(q)) = (&without, &p.quorum) {
        reasons.push(format!("without it scores_total would be {} < quorum {}", dec(rest), dec(q)));
    }
    let summary = format!(
        "One vote decided \"{}\": {} cast {power} for {}; {}.",
        p.title,
        v.voter,
        v.choice,
        reasons.join("; and ")
    );
    Some(p.signal(SignalKind::SingleVoterDecisive, p.detected, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn margin_boundary() {
        let p = proposal("basic", "closed", "100", "0");
        // For 60 (a whale with w), Against 40: margin 20. Decisive iff w > 20.
        // The rest of For is spread over four voters, each far below the margin.
        let case = |w: &str| {
            let rest = (decimal::parse("60").unwrap() - decimal::parse(w).unwrap()) / BigDecimal::from(4);
            let rest = decimal::plain(&rest);
            let r = rest.as_str();
            let votes = [("0xwhale", "1", w), ("0xs1", "1", r), ("0xs2", "1", r), ("0xs3", "1", r)];
            eval(evaluate, &p, &[votes[0], votes[1], votes[2], votes[3], ("0xs4", "1", r), ("0xagainst", "2", "40")])
        };
        assert!(case("19").is_none());
        assert!(case("20").is_none(), "an effect equal to the margin decides nothing");
        assert!(case("20.000001").is_some());
    }

    #[test]
    fn margin_evidence_cites_the_smaller_address_on_a_tie() {
        let p = proposal("basic", "closed", "100", "0");
        let s = eval(evaluate, &p, &[("0xwhale", "1", "30"), ("0xsmall", "1", "30"), ("0xagainst", "2", "40")])
            .expect("decisive");
        let v = s.evidence.deciding_vote.as_ref().unwrap();
        assert_eq!((v.voter.as_str(), v.effect.as_deref()), ("0xsmall", Some("30")));
        assert_eq!(s.evidence.decided_by, Some(vec!["margin".to_owned()]));
        assert_eq!(s.evidence.margin.as_deref(), Some("20"));
    }

    #[test]
    fn quorum_boundary() {
        // scores_total 100, quorum 80: the largest vote decides iff 100 - power < 80.
        let case = |w: &str| {
            eval(evaluate, &proposal("single-choice", "closed", "100", "80"), &[("0xw", "1", w), ("0xa", "1", "1")])
        };
        assert!(case("19.9").is_none());
        assert!(case("20").is_none(), "exactly the quorum left without it");
        let d = case("20.1").expect("decisive");
        assert_eq!(d.evidence.decided_by, Some(vec!["quorum".to_owned()]));
        assert_eq!(d.evidence.scores_total_without_vote.as_deref(), Some("79.9"));
    }

    #[test]
    fn only_voted_proposals() {
        let votes = [("0xw", "1", "30"), ("0xa", "1", "1")];
        assert!(eval(evaluate, &proposal("single-choice", "pending", "100", "80"), &votes).is_none());
        assert!(eval(evaluate, &proposal("single-choice", "closed", "100", "80"), &[]).is_none(), "no votes held");
    }
}
