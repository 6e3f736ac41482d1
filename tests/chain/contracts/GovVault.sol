// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// Compiled with GovVault so that governance.mjs can deploy them in front of it.
import {TransparentUpgradeableProxy} from "@openzeppelin/contracts/proxy/transparent/TransparentUpgradeableProxy.sol";
import {UpgradeableBeacon} from "@openzeppelin/contracts/proxy/beacon/UpgradeableBeacon.sol";
import {BeaconProxy} from "@openzeppelin/contracts/proxy/beacon/BeaconProxy.sol";

/// The implementation behind the proxies of the governance scenario's proposal D: a function no
/// bundled interface knows, so only its verified ABI (a fake Sourcify serves it) decodes it.
contract GovVault {
    uint256 public rate;
    address public beneficiary;

    event RateSet(uint256 rate, address beneficiary);

    function setRate(uint256 newRate, address newBeneficiary) external {
        rate = newRate;
        beneficiary = newBeneficiary;
        emit RateSet(newRate, newBeneficiary);
    }
}
