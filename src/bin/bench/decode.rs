//! `bench --decode`: what decoding a proposal's actions costs at ingestion (issue 47).
//!
//! Decoding runs once per action when a proposal is ingested, never per request, so this is the
//! cost an ingestion run pays per action: `rules::actions::decode_actions` and the JSON the store
//! keeps (`proposal_actions.decoded`). Fixed, in-process actions, no store and no chain:
//!
//! 1. one ERC-20 `transfer` from the timelock (a known token: its amount in whole tokens too);
//! 2. a TimelockController `scheduleBatch` of 50 calls (transfers, quorum updates, role grants
//!    and an unknown selector in turn), each decoded as an inner call;
//! 3. a Safe `execTransaction` delegatecalling MultiSend with the same 50 calls, packed.
//!
//! Each case is decoded repeatedly for about a second; the report gives actions per second and
//! inner calls per second, decoded and serialised.
use std::time::{Duration, Instant};

use alloy_dyn_abi::{DynSolValue, JsonAbiExt};
use alloy_json_abi::Function;
use alloy_primitives::{Address, B256, U256, address, keccak256};
use govdata::rules::actions::{Action, Call, Inner, Known, ProposedAction, Token, decode_actions};

const GOVERNOR: Address = address!("0x408ED6354d4973f66138C91495F2f2FCbd8724C3");
const TIMELOCK: Address = address!("0x1a9C8182C09F50C8318d769245beA52c32BE35BC");
const TOKEN: Address = address!("0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984");
const SAFE: Address = address!("0x00000000000000000000000000000000000005AF");
const MULTISEND: Address = address!("0x218543288004CD07832472D464648173c77D7eB7");
const TO: Address = address!("0x00000000000000000000000000000000000000A1");
/// Inner calls of the batch cases.
const BATCH: usize = 50;
/// How long each case is repeated, at least.
const PER_CASE: Duration = Duration::from_secs(1);

fn encode(signature: &str, values: &[DynSolValue]) -> Vec<u8> {
    Function::parse(signature).expect("a valid signature").abi_encode_input(values).expect("values match")
}

fn uint(n: u128) -> DynSolValue {
    DynSolValue::Uint(U256::from(n), 256)
}

/// The `i`th inner call of a batch: (target, calldata), four kinds in turn.
fn inner(i: usize) -> (Address, Vec<u8>) {
    match i % 4 {
        0 => {
            (TOKEN, encode("transfer(address,uint256)", &[DynSolValue::Address(TO), uint(1_250_000 * 10u128.pow(18))]))
        }
        1 => (GOVERNOR, encode("updateQuorumNumerator(uint256)", &[uint(4)])),
        2 => (
            TIMELOCK,
            encode(
                "grantRole(bytes32,address)",
                &[DynSolValue::FixedBytes(keccak256("PROPOSER_ROLE"), 32), DynSolValue::Address(TO)],
            ),
        ),
        _ => (TO, [&[0xde, 0xad, 0xbe, 0xef][..], &U256::from(42).to_be_bytes::<32>()].concat()),
    }
}

fn schedule_batch() -> Vec<u8> {
    let calls: Vec<_> = (0..BATCH).map(inner).collect();
    encode(
        "scheduleBatch(address[],uint256[],bytes[],bytes32,bytes32,uint256)",
        &[
            DynSolValue::Array(calls.iter().map(|(t, _)| DynSolValue::Address(*t)).collect()),
            DynSolValue::Array(calls.iter().map(|_| uint(0)).collect()),
            DynSolValue::Array(calls.into_iter().map(|(_, d)| DynSolValue::Bytes(d)).collect()),
            DynSolValue::FixedBytes(B256::ZERO, 32),
            DynSolValue::FixedBytes(B256::repeat_byte(7), 32),
            uint(172_800),
        ],
    )
}

/// A Safe transaction delegatecalling MultiSend with the batch's calls, packed as MultiSend
/// reads them (operation, to, value, data length, data).
fn safe_multisend() -> Vec<u8> {
    let mut packed = Vec::new();
    for (to, data) in (0..BATCH).map(inner) {
        packed.push(0u8);
        packed.extend_from_slice(to.as_slice());
        packed.extend_from_slice(&U256::ZERO.to_be_bytes::<32>());
        packed.extend_from_slice(&U256::from(data.len()).to_be_bytes::<32>());
        packed.extend_from_slice(&data);
    }
    let multisend = encode("multiSend(bytes)", &[DynSolValue::Bytes(packed)]);
    encode(
        "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
        &[
            DynSolValue::Address(MULTISEND),
            uint(0),
            DynSolValue::Bytes(multisend),
            DynSolValue::Uint(U256::from(1), 8),
            uint(0),
            uint(0),
            uint(0),
            DynSolValue::Address(Address::ZERO),
            DynSolValue::Address(Address::ZERO),
            DynSolValue::Bytes(vec![0xaa; 65]),
        ],
    )
}

/// Calls decoded in `action`, itself and every inner call at any depth.
fn calls_in(action: &Action) -> usize {
    1 + match &action.call {
        Call::Decoded(d) => match &d.inner {
            Some(Inner::Decoded { calls }) => calls.iter().map(calls_in).sum(),
            _ => 0,
        },
        _ => 0,
    }
}

pub fn run() -> anyhow::Result<()> {
    let mut known = Known::default();
    known.tokens.insert(TOKEN, Token { symbol: "UNI".into(), decimals: 18 });
    known.labels.insert(TIMELOCK, "the timelock".into());
    let proposed = |target, calldata| ProposedAction { target, value: U256::ZERO, signature: None, calldata };
    let cases = [
        ("one ERC-20 transfer", proposed(TOKEN, inner(0).1)),
        ("timelock scheduleBatch of 50 calls", proposed(TIMELOCK, schedule_batch())),
        ("Safe execTransaction → MultiSend of 50 calls", proposed(SAFE, safe_multisend())),
    ];
    println!("decoding at ingestion (decode_actions + the stored JSON), {BATCH} calls per batch:");
    for (name, action) in cases {
        let actions = std::slice::from_ref(&action);
        let calls = decode_actions(&known, &TIMELOCK, actions).iter().map(calls_in).sum::<usize>();
        anyhow::ensure!(calls > 1 || name.starts_with("one"), "{name}: the inner calls were not decoded");
        let (mut rounds, mut bytes) = (0u64, 0usize);
        let started = Instant::now();
        while started.elapsed() < PER_CASE {
            let decoded = decode_actions(&known, &TIMELOCK, actions);
            bytes = serde_json::to_string(&decoded[0])?.len();
            rounds += 1;
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "  {name}: {:.0} actions/s, {:.0} calls/s ({calls} per action; {:.1} µs per action; {bytes} bytes stored)",
            rounds as f64 / secs,
            (rounds * calls as u64) as f64 / secs,
            secs * 1e6 / rounds as f64
        );
    }
    Ok(())
}
