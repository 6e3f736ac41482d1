// SPDX-License-Identifier: MIT
// Test-only stand-in for Multicall3 (0xcA11bde05977b3631167028862bE2a173976CA11), which every
// public chain has but a fresh anvil does not. deploy-token.mjs installs this contract's runtime
// code at that address with `anvil_setCode`. @x402/evm's facilitator only uses `tryAggregate`
// (through eth_call) to diagnose a failed simulation: with it, a replayed payment is refused as
// "invalid_exact_evm_nonce_already_used" instead of the generic "..._transaction_simulation_failed".
pragma solidity ^0.8.20;

contract Multicall3Lite {
    struct Call {
        address target;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls)
        external
        payable
        returns (Result[] memory returnData)
    {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(success, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }
}
