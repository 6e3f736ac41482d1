//! The bundled table: the standard interfaces governance calls most, with parameter names, so
//! their calls, logs and reverts decode when no source knows the contract.
//!
//! Written as human-readable ABI items (alloy's `JsonAbi::parse`), checked against the sources
//! in `../shared/reference/actions-alerts.md` (OpenZeppelin Contracts 5.x, Safe 1.5.0). One
//! signature declared by two interfaces (ERC-20's and ERC-721's `approve`, `transferFrom`) is
//! one entry, named as the first interface listed names it: ERC-20, since governance moves
//! treasury tokens far more often than NFTs. Built once, on first use.
use std::collections::HashMap;
use std::sync::LazyLock;

use alloy_json_abi::{Error, Event, Function, JsonAbi};
use alloy_primitives::{B256, Selector};

/// Each interface's name and items, in the order names are taken from.
const INTERFACES: &[(&str, &[&str])] = &[
    (
        "ERC-20",
        &[
            "function transfer(address to, uint256 value) returns (bool)",
            "function transferFrom(address from, address to, uint256 value) returns (bool)",
            "function approve(address spender, uint256 value) returns (bool)",
            "function increaseAllowance(address spender, uint256 addedValue) returns (bool)",
            "function decreaseAllowance(address spender, uint256 subtractedValue) returns (bool)",
            "function delegate(address delegatee)",
            "event Transfer(address indexed from, address indexed to, uint256 value)",
            "event Approval(address indexed owner, address indexed spender, uint256 value)",
            "event DelegateChanged(address indexed delegator, address indexed fromDelegate, address indexed toDelegate)",
            "event DelegateVotesChanged(address indexed delegate, uint256 previousVotes, uint256 newVotes)",
            "error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)",
            "error ERC20InvalidSender(address sender)",
            "error ERC20InvalidReceiver(address receiver)",
            "error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)",
            "error ERC20InvalidApprover(address approver)",
            "error ERC20InvalidSpender(address spender)",
        ],
    ),
    (
        "ERC-721",
        &[
            "function transferFrom(address from, address to, uint256 tokenId)",
            "function safeTransferFrom(address from, address to, uint256 tokenId)",
            "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)",
            "function approve(address to, uint256 tokenId)",
            "function setApprovalForAll(address operator, bool approved)",
            "event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)",
            "event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)",
            "event ApprovalForAll(address indexed owner, address indexed operator, bool approved)",
            "error ERC721InvalidOwner(address owner)",
            "error ERC721NonexistentToken(uint256 tokenId)",
            "error ERC721IncorrectOwner(address sender, uint256 tokenId, address owner)",
            "error ERC721InvalidSender(address sender)",
            "error ERC721InvalidReceiver(address receiver)",
            "error ERC721InsufficientApproval(address operator, uint256 tokenId)",
            "error ERC721InvalidApprover(address approver)",
            "error ERC721InvalidOperator(address operator)",
        ],
    ),
    (
        "ERC-1155",
        &[
            "function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)",
            "function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] values, bytes data)",
            "function setApprovalForAll(address operator, bool approved)",
            "event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)",
            "event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)",
            "event ApprovalForAll(address indexed account, address indexed operator, bool approved)",
            "error ERC1155InsufficientBalance(address sender, uint256 balance, uint256 needed, uint256 tokenId)",
            "error ERC1155InvalidSender(address sender)",
            "error ERC1155InvalidReceiver(address receiver)",
            "error ERC1155MissingApprovalForAll(address operator, address owner)",
            "error ERC1155InvalidApprover(address approver)",
            "error ERC1155InvalidOperator(address operator)",
            "error ERC1155InvalidArrayLength(uint256 idsLength, uint256 valuesLength)",
        ],
    ),
    (
        // OpenZeppelin 5.x settings (uint48 delay, uint32 period) and 4.x (uint256 both).
        "Governor",
        &[
            "function setVotingDelay(uint48 newVotingDelay)",
            "function setVotingDelay(uint256 newVotingDelay)",
            "function setVotingPeriod(uint32 newVotingPeriod)",
            "function setVotingPeriod(uint256 newVotingPeriod)",
            "function setProposalThreshold(uint256 newProposalThreshold)",
            "function updateQuorumNumerator(uint256 newQuorumNumerator)",
            "function updateTimelock(address newTimelock)",
            "function relay(address target, uint256 value, bytes data)",
            "event ProposalCreated(uint256 proposalId, address proposer, address[] targets, uint256[] values, string[] signatures, bytes[] calldatas, uint256 voteStart, uint256 voteEnd, string description)",
            "event ProposalQueued(uint256 proposalId, uint256 etaSeconds)",
            "event ProposalExecuted(uint256 proposalId)",
            "event ProposalCanceled(uint256 proposalId)",
            "event VotingDelaySet(uint256 oldVotingDelay, uint256 newVotingDelay)",
            "event VotingPeriodSet(uint256 oldVotingPeriod, uint256 newVotingPeriod)",
            "event ProposalThresholdSet(uint256 oldProposalThreshold, uint256 newProposalThreshold)",
            "event QuorumNumeratorUpdated(uint256 oldQuorumNumerator, uint256 newQuorumNumerator)",
            "event TimelockChange(address oldTimelock, address newTimelock)",
        ],
    ),
    (
        // Its role functions are AccessControl's, below.
        "TimelockController",
        &[
            "function schedule(address target, uint256 value, bytes data, bytes32 predecessor, bytes32 salt, uint256 delay)",
            "function scheduleBatch(address[] targets, uint256[] values, bytes[] payloads, bytes32 predecessor, bytes32 salt, uint256 delay)",
            "function execute(address target, uint256 value, bytes payload, bytes32 predecessor, bytes32 salt)",
            "function executeBatch(address[] targets, uint256[] values, bytes[] payloads, bytes32 predecessor, bytes32 salt)",
            "function cancel(bytes32 id)",
            "function updateDelay(uint256 newDelay)",
            "event CallScheduled(bytes32 indexed id, uint256 indexed index, address target, uint256 value, bytes data, bytes32 predecessor, uint256 delay)",
            "event CallExecuted(bytes32 indexed id, uint256 indexed index, address target, uint256 value, bytes data)",
            "event CallSalt(bytes32 indexed id, bytes32 salt)",
            "event Cancelled(bytes32 indexed id)",
            "event MinDelayChange(uint256 oldDuration, uint256 newDuration)",
            "error TimelockInvalidOperationLength(uint256 targets, uint256 payloads, uint256 values)",
            "error TimelockInsufficientDelay(uint256 delay, uint256 minDelay)",
            "error TimelockUnexpectedOperationState(bytes32 operationId, bytes32 expectedStates)",
            "error TimelockUnexecutedPredecessor(bytes32 predecessorId)",
            "error TimelockUnauthorizedCaller(address caller)",
        ],
    ),
    (
        "AccessControl",
        &[
            "function grantRole(bytes32 role, address account)",
            "function revokeRole(bytes32 role, address account)",
            "function renounceRole(bytes32 role, address callerConfirmation)",
            "event RoleGranted(bytes32 indexed role, address indexed account, address indexed sender)",
            "event RoleRevoked(bytes32 indexed role, address indexed account, address indexed sender)",
            "event RoleAdminChanged(bytes32 indexed role, bytes32 indexed previousAdminRole, bytes32 indexed newAdminRole)",
            "error AccessControlUnauthorizedAccount(address account, bytes32 neededRole)",
            "error AccessControlBadConfirmation()",
        ],
    ),
    (
        "Ownable",
        &[
            "function transferOwnership(address newOwner)",
            "function renounceOwnership()",
            "function acceptOwnership()",
            "event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)",
            "event OwnershipTransferStarted(address indexed previousOwner, address indexed newOwner)",
            "error OwnableUnauthorizedAccount(address account)",
            "error OwnableInvalidOwner(address owner)",
        ],
    ),
    (
        // `Enum.Operation` is ABI-encoded as uint8 (0 call, 1 delegatecall).
        "Safe",
        &[
            "function execTransaction(address to, uint256 value, bytes data, uint8 operation, uint256 safeTxGas, uint256 baseGas, uint256 gasPrice, address gasToken, address refundReceiver, bytes signatures) returns (bool success)",
            "function execTransactionFromModule(address to, uint256 value, bytes data, uint8 operation) returns (bool success)",
            "function addOwnerWithThreshold(address owner, uint256 _threshold)",
            "function removeOwner(address prevOwner, address owner, uint256 _threshold)",
            "function swapOwner(address prevOwner, address oldOwner, address newOwner)",
            "function changeThreshold(uint256 _threshold)",
            "function enableModule(address module)",
            "function disableModule(address prevModule, address module)",
            "function setGuard(address guard)",
            "function setModuleGuard(address moduleGuard)",
            "function setFallbackHandler(address handler)",
            "event AddedOwner(address indexed owner)",
            "event RemovedOwner(address indexed owner)",
            "event ChangedThreshold(uint256 threshold)",
            "event EnabledModule(address indexed module)",
            "event DisabledModule(address indexed module)",
            "event ChangedGuard(address indexed guard)",
            "event ChangedModuleGuard(address indexed moduleGuard)",
            "event ChangedFallbackHandler(address indexed handler)",
            "event ExecutionSuccess(bytes32 indexed txHash, uint256 payment)",
            "event ExecutionFailure(bytes32 indexed txHash, uint256 payment)",
            "event ExecutionFromModuleSuccess(address indexed module)",
            "event ExecutionFromModuleFailure(address indexed module)",
        ],
    ),
    ("MultiSend", &["function multiSend(bytes transactions)"]),
    ("Solidity", &["error Error(string message)", "error Panic(uint256 code)"]),
];

/// The parsed interfaces, indexed by selector and topic0.
pub struct Table {
    /// Each interface and its items as parsed.
    pub interfaces: Vec<(&'static str, JsonAbi)>,
    functions: HashMap<Selector, Vec<Function>>,
    events: HashMap<B256, Vec<Event>>,
    errors: HashMap<Selector, Vec<Error>>,
}

impl Table {
    /// The distinct functions with this selector (one, unless the table itself collides).
    pub fn functions(&self, selector: &Selector) -> &[Function] {
        self.functions.get(selector).map_or(&[], Vec::as_slice)
    }

    /// The distinct events with this topic0 (ERC-20's and ERC-721's `Transfer` share one and
    /// differ in which parameters are indexed).
    pub fn events(&self, topic0: &B256) -> &[Event] {
        self.events.get(topic0).map_or(&[], Vec::as_slice)
    }

    pub fn errors(&self, selector: &Selector) -> &[Error] {
        self.errors.get(selector).map_or(&[], Vec::as_slice)
    }
}

/// The table, parsed on first use.
pub static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut table =
        Table { interfaces: Vec::new(), functions: HashMap::new(), events: HashMap::new(), errors: HashMap::new() };
    for (name, items) in INTERFACES {
        // A constant table: a typo in it is a bug the tests catch, not a runtime condition.
        let abi = JsonAbi::parse(items.iter().copied()).unwrap_or_else(|e| panic!("bundled ABI {name}: {e}"));
        for f in abi.functions() {
            let same = table.functions.entry(f.selector()).or_default();
            if !same.iter().any(|g| g.signature() == f.signature()) {
                same.push(f.clone());
            }
        }
        for e in abi.events() {
            let same = table.events.entry(e.selector()).or_default();
            if !same.iter().any(|g| event_key(g) == event_key(e)) {
                same.push(e.clone());
            }
        }
        for e in abi.errors() {
            let same = table.errors.entry(e.selector()).or_default();
            if !same.iter().any(|g| g.signature() == e.signature()) {
                same.push(e.clone());
            }
        }
        table.interfaces.push((name, abi));
    }
    table
});

/// An event's types with its indexed ones marked: two events with one topic0 decode alike only
/// when this is equal (`Transfer(address indexed,address indexed,uint256)`).
pub fn event_key(event: &Event) -> String {
    let params: Vec<String> = event
        .inputs
        .iter()
        .map(|p| if p.indexed { format!("{} indexed", p.selector_type()) } else { p.selector_type().into_owned() })
        .collect();
    format!("{}({})", event.name, params.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_parses_and_the_table_has_no_collision_of_its_own() {
        let table = &*TABLE;
        assert_eq!(table.interfaces.len(), INTERFACES.len());
        for (name, items) in INTERFACES {
            let abi = &table.interfaces.iter().find(|(n, _)| n == name).expect("parsed").1;
            assert_eq!(abi.len(), items.len(), "{name}: every item is kept");
        }
        // The bundled table alone never makes a selector ambiguous.
        assert!(table.functions.values().all(|fs| fs.len() == 1));
        assert!(table.errors.values().all(|es| es.len() == 1));
        assert!(
            table.events.values().all(|es| {
                es.iter().all(|e| {
                    let topics = e.inputs.iter().filter(|p| p.indexed).count();
                    es.iter().filter(|o| o.inputs.iter().filter(|p| p.indexed).count() == topics).count() == 1
                })
            }),
            "two bundled events with one topic0 differ in their topic count"
        );
    }

    #[test]
    fn selectors_match_the_checked_reference() {
        let selector = |sig: &str| {
            let f = TABLE.interfaces.iter().flat_map(|(_, abi)| abi.functions()).find(|f| f.signature() == sig);
            alloy_primitives::hex::encode(f.unwrap_or_else(|| panic!("{sig} bundled")).selector())
        };
        assert_eq!(selector("transfer(address,uint256)"), "a9059cbb");
        assert_eq!(selector("relay(address,uint256,bytes)"), "c28bc2fa");
        assert_eq!(selector("schedule(address,uint256,bytes,bytes32,bytes32,uint256)"), "01d5062a");
        assert_eq!(selector("scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)"), "8f2a0bb0");
        assert_eq!(selector("execute(address,uint256,bytes,bytes32,bytes32)"), "134008d3");
        assert_eq!(selector("executeBatch(address[],uint256[],bytes[],bytes32,bytes32)"), "e38335e5");
        assert_eq!(selector("cancel(bytes32)"), "c4d252f5");
        assert_eq!(selector("updateDelay(uint256)"), "64d62353");
        assert_eq!(
            selector("execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)"),
            "6a761202"
        );
        assert_eq!(selector("multiSend(bytes)"), "8d80ff0a");
        assert_eq!(selector("addOwnerWithThreshold(address,uint256)"), "0d582f13");
        assert_eq!(selector("swapOwner(address,address,address)"), "e318b52b");
        assert_eq!(selector("enableModule(address)"), "610b5925");
        assert_eq!(selector("setModuleGuard(address)"), "e068df37");
        assert_eq!(selector("execTransactionFromModule(address,uint256,bytes,uint8)"), "468721a7");
        let topic = |name: &str| {
            let e = TABLE.interfaces.iter().flat_map(|(_, abi)| abi.events()).find(|e| e.name == name);
            alloy_primitives::hex::encode(e.expect("bundled").selector())
        };
        assert_eq!(topic("CallScheduled"), "4cf4410cc57040e44862ef0f45f3dd5a5e02db8eb8add648d4b0e236f1d07dca");
        assert_eq!(topic("CallExecuted"), "c2617efa69bab66782fa219543714338489c4e9e178271560a91b82c3f612b58");
        assert_eq!(topic("ProposalCreated"), "7d84a6263ae0d98d3329bd7b46bb4e8d6f98cd35a7adb45c274c8b7fd5ebd5e0");
        assert_eq!(topic("ProposalQueued"), "9a2e42fd6722813d69113e7d0079d3d940171428df7373df9c7f7617cfda2892");
    }
}
