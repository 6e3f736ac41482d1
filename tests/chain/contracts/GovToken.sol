// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC20Permit} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Permit.sol";
import {ERC20Votes} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Votes.sol";
import {Nonces} from "@openzeppelin/contracts/utils/Nonces.sol";

/// Governance token for the local-chain governance scenario (governance.mjs): a plain
/// OpenZeppelin ERC20Votes token, 18 decimals, with the default block-number clock. No owner and
/// no mint function: the constructor mints the whole supply to the given holders.
contract GovToken is ERC20, ERC20Permit, ERC20Votes {
    error LengthMismatch();

    constructor(address[] memory holders, uint256[] memory amounts) ERC20("Gov Token", "GOV") ERC20Permit("Gov Token") {
        if (holders.length != amounts.length) revert LengthMismatch();
        for (uint256 i = 0; i < holders.length; i++) {
            _mint(holders[i], amounts[i]);
        }
    }

    function _update(address from, address to, uint256 value) internal override(ERC20, ERC20Votes) {
        super._update(from, to, value);
    }

    function nonces(address owner) public view override(ERC20Permit, Nonces) returns (uint256) {
        return super.nonces(owner);
    }
}
