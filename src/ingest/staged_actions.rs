//! A proposal's actions decoded and staged, the same for every connector (issue 47): each
//! action as proposed (target, wei, signature, calldata) beside its decoded answer, in order.
use alloy_primitives::Address;

use crate::rules::actions::{self, Known, ProposedAction};
use crate::store::entities::proposal_action::ExecutionPath;
use crate::store::staging::{ActionRecord, ProposalActionsRecord, ProposalRef, Record};

/// What a connector knows to decode a proposal's actions: the contracts' ABIs, tokens and
/// labels, and the account that executes them.
pub struct Decoding {
    pub known: Known,
    pub executor: Address,
}

/// The record of `proposal`'s actions, decoded with `decoding`.
pub fn record(
    dao_id: &str,
    proposal: ProposalRef,
    execution_path: ExecutionPath,
    proposed: &[ProposedAction],
    decoding: &Decoding,
) -> Record {
    let decoded = actions::decode_actions(&decoding.known, &decoding.executor, proposed);
    let actions = proposed
        .iter()
        .zip(decoded)
        .map(|(p, d)| ActionRecord {
            target: format!("{:#x}", p.target),
            value_wei: p.value.to_string(),
            signature: p.signature.clone(),
            calldata: actions::hex(&p.calldata),
            decoded: serde_json::to_string(&d).expect("a decoded action serialises"),
        })
        .collect();
    Record::ProposalActions(ProposalActionsRecord {
        dao_id: dao_id.to_owned(),
        proposal,
        execution_path,
        actions: Some(actions),
    })
}
