// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Governor} from "@openzeppelin/contracts/governance/Governor.sol";
import {GovernorSettings} from "@openzeppelin/contracts/governance/extensions/GovernorSettings.sol";
import {GovernorCountingFractional} from "@openzeppelin/contracts/governance/extensions/GovernorCountingFractional.sol";
import {GovernorVotes} from "@openzeppelin/contracts/governance/extensions/GovernorVotes.sol";
import {GovernorVotesQuorumFraction} from "@openzeppelin/contracts/governance/extensions/GovernorVotesQuorumFraction.sol";
import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";

/// Governor for the delegation history scenario (history.mjs), as the OpenZeppelin wizard writes
/// it with fractional counting: voting delay 1 block, voting period 10 blocks, proposal threshold
/// 0, quorum 4% of the supply at the snapshot (for + abstain count toward it), no timelock (the
/// governor executes, so a proposal can change its own quorum numerator).
contract GovFractional is
    Governor,
    GovernorSettings,
    GovernorCountingFractional,
    GovernorVotes,
    GovernorVotesQuorumFraction
{
    constructor(IVotes token)
        Governor("Gov Fractional")
        GovernorSettings(1, 10, 0)
        GovernorVotes(token)
        GovernorVotesQuorumFraction(4)
    {}

    function proposalThreshold() public view override(Governor, GovernorSettings) returns (uint256) {
        return super.proposalThreshold();
    }
}
