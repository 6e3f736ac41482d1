//! The governor's and the token's ABI: the events read from their logs and the functions called,
//! as OpenZeppelin Governor and Compound GovernorBravo declare them.
use alloy_sol_types::sol;

use crate::contract::vocabulary::ProposalState;

sol! {
    event ProposalCreated(uint256 proposalId, address proposer, address[] targets, uint256[] values, string[] signatures, bytes[] calldatas, uint256 voteStart, uint256 voteEnd, string description);
    event VoteCast(address indexed voter, uint256 proposalId, uint8 support, uint256 weight, string reason);
    event VoteCastWithParams(address indexed voter, uint256 proposalId, uint8 support, uint256 weight, string reason, bytes params);
    event ProposalQueued(uint256 proposalId, uint256 etaSeconds);
    event ProposalExecuted(uint256 proposalId);
    event ProposalCanceled(uint256 proposalId);
    event DelegateVotesChanged(address indexed delegate, uint256 previousVotes, uint256 newVotes);
    event DelegateChanged(address indexed delegator, address indexed fromDelegate, address indexed toDelegate);

    function state(uint256 proposalId) external view returns (uint8);
    function proposalVotes(uint256 proposalId) external view returns (uint256 againstVotes, uint256 forVotes, uint256 abstainVotes);
    function proposalSnapshot(uint256 proposalId) external view returns (uint256);
    function proposalDeadline(uint256 proposalId) external view returns (uint256);
    function quorum(uint256 timepoint) external view returns (uint256);
    function COUNTING_MODE() external view returns (string);
    function CLOCK_MODE() external view returns (string);
    function timelock() external view returns (address);
    function GRACE_PERIOD() external view returns (uint256);
    function usedVotes(uint256 proposalId, address account) external view returns (uint256);
    function totalSupply() external view returns (uint256);
    function getPastTotalSupply(uint256 timepoint) external view returns (uint256);

    // What decoding asks of the contracts a proposal calls: an ERC-20's metadata, a beacon's
    // implementation (EIP-1967).
    function decimals() external view returns (uint8);
    function symbol() external view returns (string);
    function implementation() external view returns (address);
}

/// `IGovernor.ProposalState`, in enum order (GovernorBravo's is the same).
pub(super) const STATES: [ProposalState; 8] = [
    ProposalState::Pending,
    ProposalState::Active,
    ProposalState::Canceled,
    ProposalState::Defeated,
    ProposalState::Succeeded,
    ProposalState::Queued,
    ProposalState::Expired,
    ProposalState::Executed,
];

#[cfg(test)]
mod tests {
    use alloy_sol_types::SolEvent;

    use super::*;

    #[test]
    fn event_signatures_match_the_reference_topics() {
        // topic0 of each event, as `../shared/reference/governance-data.md` and OpenZeppelin 5.7's
        // receipts on anvil give them.
        let expected = [
            (ProposalCreated::SIGNATURE_HASH, "0x7d84a6263ae0d98d3329bd7b46bb4e8d6f98cd35a7adb45c274c8b7fd5ebd5e0"),
            (VoteCast::SIGNATURE_HASH, "0xb8e138887d0aa13bab447e82de9d5c1777041ecd21ca36ba824ff1e6c07ddda4"),
            (VoteCastWithParams::SIGNATURE_HASH, "0xe2babfbac5889a709b63bb7f598b324e08bc5a4fb9ec647fb3cbc9ec07eb8712"),
            (ProposalQueued::SIGNATURE_HASH, "0x9a2e42fd6722813d69113e7d0079d3d940171428df7373df9c7f7617cfda2892"),
            (ProposalExecuted::SIGNATURE_HASH, "0x712ae1383f79ac853f8d882153778e0260ef8f03b504e2866e0593e04d2b291f"),
            (ProposalCanceled::SIGNATURE_HASH, "0x789cf55be980739dad1d0699b93b58e806b51c9d96619bfa8fe0a28abaa7b30c"),
            (
                DelegateVotesChanged::SIGNATURE_HASH,
                "0xdec2bacdd2f05b59de34da9b523dff8be42e5e38e818c82fdb0bae774387a724",
            ),
            (DelegateChanged::SIGNATURE_HASH, "0x3134e8a2e6d97e929a7e54011ea5485d7d196dd5f0ba4d4ef95803e8e3fc257f"),
        ];
        for (hash, topic0) in expected {
            assert_eq!(format!("{hash:#x}"), topic0);
        }
    }
}
