//! `close_race`: the two leading choices are within a small share of the counted power, on a
//! closed proposal or an active one near its deadline. Only a complete tally says so.
use super::{Desired, Proposal, dec, threshold};
use crate::contract::signals::{self as contract, SignalKind};
use crate::rules::tally;

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    // A partial tally could be turned by the votes not held.
    let f = p.complete()?;
    let near = p.closed || (p.active && p.time_left.is_some_and(|t| t <= contract::CLOSE_RACE_WINDOW_MS));
    // Strictly below the share: a margin of exactly 5% is not close.
    let pair = f
        .pair
        .as_ref()
        .filter(|pair| near && pair.margin < threshold(contract::CLOSE_RACE_MAX_MARGIN_SHARE) * &pair.counted)?;
    let mut e = p.with_quorum(p.with_tally(p.evidence(SignalKind::CloseRace), f));
    e.citations[0].supports = vec!["tally".to_owned(), "upstreamVotes".to_owned()];
    if !p.closed {
        e.as_of_ms = Some(p.as_of);
        e.time_left_ms = p.time_left.map(|t| t.to_string());
    }
    let when = if p.closed { "at the close" } else { "near the deadline" };
    let summary = format!(
        "Close race on \"{}\" {when}: {} {} vs {} {}, margin {} ({} of the counted power {}).",
        p.title,
        p.name(pair.first),
        dec(&pair.first_score),
        p.name(pair.second),
        dec(&pair.second_score),
        dec(&pair.margin),
        tally::share(&pair.margin, &pair.counted),
        dec(&pair.counted),
    );
    Some(p.signal(SignalKind::CloseRace, p.detected, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn margin_share_boundary() {
        let p = proposal("basic", "closed", "100", "0");
        let close = |f: &str, a: &str| eval(evaluate, &p, &borrow(&race(f, a)));
        // Counted 100: margin 4.99 (share 0.0499) is close; exactly 5 (0.05) is not; 6 is not.
        let d = close("52.495", "47.505").expect("a close race");
        assert_eq!(d.evidence.margin_share.as_deref(), Some("0.0499"));
        assert!(close("52.5", "47.5").is_none());
        assert!(close("53", "47").is_none());
    }

    #[test]
    fn abstain_does_not_count() {
        // For 50.1 vs Against 49.9 with a large Abstain is still close.
        let mut v = race("50.1", "49.9");
        v.push(("0xab".to_owned(), "3", "1000".to_owned()));
        let d = eval(evaluate, &proposal("basic", "closed", "100", "0"), &borrow(&v)).expect("a close race");
        assert_eq!(d.evidence.counted_power.as_deref(), Some("100"));
    }

    #[test]
    fn deadline_window_boundary() {
        let p = proposal("basic", "active", "100", "0");
        let v = race("51", "49");
        let window = contract::CLOSE_RACE_WINDOW_MS;
        let at = |as_of: i64| eval_at(evaluate, &p, &borrow(&v), as_of);
        assert!(at(END - window).is_some(), "exactly the window left");
        assert!(at(END - window + 1).is_some());
        assert!(at(END - window - 1).is_none(), "1 ms more than the window left");
        let d = at(END - window).unwrap();
        assert_eq!((d.detected_ms, d.evidence.time_left_ms.as_deref()), (END - window, Some("172800000")));
    }

    #[test]
    fn needs_every_vote_and_a_deciding_tally() {
        let v = race("51", "49");
        // A partial tally says nothing.
        let votes: Vec<_> = borrow(&v).iter().map(|(a, b, c)| vote(a, b, c)).collect();
        let mut partial = proposal("basic", "closed", "100", "0");
        partial.upstream_vote_count = Some(votes.len() as i64 + 1);
        let facts = super::super::analyse_votes(&partial, &votes);
        assert!(!facts.complete);
        let ctx = Default::default();
        assert!(evaluate(&Proposal::new(&partial, Some(&facts), &ctx, END)).is_none());
        // Ranked-choice first preferences do not decide a race.
        assert!(eval(evaluate, &proposal("ranked-choice", "closed", "100", "0"), &borrow(&v)).is_none());
        // Pending proposals are not racing yet.
        assert!(eval_at(evaluate, &proposal("basic", "pending", "100", "0"), &borrow(&v), END - H).is_none());
    }
}
