//! `new_author`: an author's first proposal in the DAO, once the DAO has enough earlier proposals
//! for "first" to mean something.
use super::{Desired, Proposal};
use crate::contract::signals::{self as contract, SignalKind};

pub fn evaluate(p: &Proposal) -> Option<Desired> {
    if !p.ctx.first_by_author || p.ctx.prior_proposals < contract::NEW_AUTHOR_MIN_PRIOR_PROPOSALS {
        return None;
    }
    let mut e = p.evidence(SignalKind::NewAuthor);
    e.author = Some(p.row.author.clone());
    e.prior_proposals = Some(p.ctx.prior_proposals.to_string());
    let summary = format!(
        "First proposal by {} in {}: \"{}\" (after {} earlier proposals by others).",
        p.row.author, p.row.dao_id, p.title, p.ctx.prior_proposals
    );
    // Detected when the proposal was made, whatever its state now.
    Some(p.signal(SignalKind::NewAuthor, p.row.created_ms, summary, e))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn fires(authors: &[&str]) -> bool {
        eval_last(evaluate, &history(&vec![1; authors.len()], authors)).is_some()
    }

    #[test]
    fn prior_proposals_boundary() {
        assert!(!fires(&["0xa", "0xa", "0xa", "0xa", "0xb"]), "4 earlier proposals: too early to tell");
        assert!(fires(&["0xa", "0xa", "0xa", "0xa", "0xa", "0xb"]), "exactly 5");
        assert!(fires(&["0xa", "0xa", "0xa", "0xa", "0xa", "0xa", "0xb"]));
    }

    #[test]
    fn only_the_first_proposal_of_an_author() {
        assert!(!fires(&["0xb", "0xa", "0xa", "0xa", "0xa", "0xb"]), "not the author's first");
    }

    #[test]
    fn detected_at_creation() {
        let ps = history(&[1; 6], &["0xa", "0xa", "0xa", "0xa", "0xa", "0xb"]);
        let d = eval_last(evaluate, &ps).unwrap();
        assert_eq!(d.detected_ms, ps[5].created_ms);
        assert_eq!(d.evidence.prior_proposals.as_deref(), Some("5"));
        assert_eq!(d.natural_key, "new_author:testdao:snapshot:0x05");
    }
}
