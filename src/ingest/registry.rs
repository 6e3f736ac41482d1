//! The DAO registry: which DAOs are covered and where each one's sources live (TOML, the shape
//! CONTRACT.md gives). The bundled default (`data/registry.toml`) covers the sample's DAOs.
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::contract::vocabulary::SourceKind;
use crate::store::address;

/// The registry compiled into the binary.
pub const BUNDLED: &str = include_str!("../../data/registry.toml");

pub const DEFAULT_HUB: &str = "https://hub.snapshot.org/graphql";

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    #[serde(rename = "dao", default)]
    pub daos: Vec<DaoEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaoEntry {
    /// The public daoId slug.
    pub id: String,
    pub name: String,
    pub symbol: Option<String>,
    pub snapshot: Option<SnapshotSource>,
    pub discourse: Option<DiscourseSource>,
    pub onchain: Option<OnchainSource>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSource {
    pub space: String,
    #[serde(default = "default_hub")]
    pub hub: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscourseSource {
    /// The forum's base URL (`https://gov.uniswap.org`).
    pub url: String,
    /// Category ids to follow; every category when empty.
    #[serde(default)]
    pub categories: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnchainSource {
    pub chain_id: u64,
    pub rpc_url: String,
    pub governor: String,
    pub token: String,
    /// The first block to scan (the governor's or token's deployment).
    pub start_block: u64,
    /// Blocks behind the head that are not read yet, so a reorg cannot change what was stored.
    #[serde(default = "default_confirmations")]
    pub confirmations: u64,
    /// Blocks per `eth_getLogs` request (halved when the node refuses a range).
    #[serde(default = "default_block_range")]
    pub block_range: u64,
    #[serde(default = "default_decimals")]
    pub token_decimals: u32,
    /// ABIs for contracts the DAO's proposals call, used to decode their actions before the
    /// bundled standard interfaces.
    #[serde(default)]
    pub abis: Vec<AbiFile>,
}

/// An ABI file for one contract (`abis = [{ address = "0x…", file = "abis/treasury.json" }]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbiFile {
    pub address: String,
    /// A JSON ABI (an array, or an object with an `abi` member as compilers write it), relative
    /// to the registry file; `Registry::load` makes it a path from the working directory.
    pub file: String,
    /// The address and ABI, read and parsed once by `Registry::load`, which refuses a file it
    /// cannot read; a registry parsed from text alone reads the file when it is used.
    #[serde(skip)]
    pub loaded: Option<Arc<(alloy_primitives::Address, alloy_json_abi::JsonAbi)>>,
}

impl AbiFile {
    /// The address and ABI: as `Registry::load` read them, or read now.
    pub fn abi(&self) -> anyhow::Result<Arc<(alloy_primitives::Address, alloy_json_abi::JsonAbi)>> {
        match &self.loaded {
            Some(loaded) => Ok(loaded.clone()),
            None => Ok(Arc::new(self.read()?)),
        }
    }

    /// Reads and parses the file.
    fn read(&self) -> anyhow::Result<(alloy_primitives::Address, alloy_json_abi::JsonAbi)> {
        let address = self.address.parse().with_context(|| format!("`{}` is not an address", self.address))?;
        let text = std::fs::read_to_string(&self.file).with_context(|| format!("cannot read {}", self.file))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", self.file))?;
        // Compiler artifacts (Foundry, Hardhat) hold the ABI under `abi`.
        let abi = match json {
            serde_json::Value::Object(mut o) if o.contains_key("abi") => o.remove("abi").unwrap_or_default(),
            other => other,
        };
        let abi = serde_json::from_value(abi).with_context(|| format!("{} is not a JSON ABI", self.file))?;
        Ok((address, abi))
    }
}

fn default_hub() -> String {
    DEFAULT_HUB.to_owned()
}
fn default_confirmations() -> u64 {
    12
}
fn default_block_range() -> u64 {
    2_000
}
fn default_decimals() -> u32 {
    18
}

/// The sources a connector ingests (`--source`); Tally delegates come from the bundled export only.
pub const CONNECTED: [SourceKind; 3] = [SourceKind::Snapshot, SourceKind::Discourse, SourceKind::Onchain];

impl DaoEntry {
    pub fn has(&self, kind: SourceKind) -> bool {
        match kind {
            SourceKind::Snapshot => self.snapshot.is_some(),
            SourceKind::Discourse => self.discourse.is_some(),
            SourceKind::Onchain => self.onchain.is_some(),
            SourceKind::Tally => false,
        }
    }
}

impl Registry {
    pub fn bundled() -> Self {
        Self::parse(BUNDLED, "the bundled registry").expect("the bundled registry is valid (tested)")
    }

    /// Reads the registry at `path`, or the bundled one when `path` is `None`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        match path {
            None => Ok(Self::bundled()),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the registry {}", path.display()))?;
                let mut registry = Self::parse(&text, &path.display().to_string())?;
                let dir = path.parent().unwrap_or(Path::new("."));
                for dao in &mut registry.daos {
                    for abi in dao.onchain.iter_mut().flat_map(|o| o.abis.iter_mut()) {
                        abi.file = dir.join(&abi.file).display().to_string();
                        let read = abi.read();
                        abi.loaded = Some(Arc::new(
                            read.with_context(|| format!("{}: DAO `{}`: onchain.abis", path.display(), dao.id))?,
                        ));
                    }
                }
                Ok(registry)
            }
        }
    }

    /// Parses and checks a registry: ids are unique slugs, URLs are http(s), addresses are
    /// 20-byte hex, block ranges are positive.
    pub fn parse(text: &str, name: &str) -> anyhow::Result<Self> {
        let registry: Registry = toml::from_str(text).with_context(|| format!("{name} is not a valid registry"))?;
        let mut ids = BTreeSet::new();
        for dao in &registry.daos {
            let at = |what: &str| format!("{name}: DAO `{}`: {what}", dao.id);
            let slug = !dao.id.is_empty()
                && dao.id.len() <= 64
                && dao.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !dao.id.starts_with('-');
            if !slug {
                bail!(at("`id` must be a slug: lowercase letters, digits and `-`, at most 64 characters"));
            }
            if !ids.insert(dao.id.as_str()) {
                bail!(at("the id is listed twice"));
            }
            if let Some(s) = &dao.snapshot {
                check_url(&s.hub).with_context(|| at("snapshot.hub"))?;
                if s.space.trim().is_empty() {
                    bail!(at("snapshot.space is empty"));
                }
            }
            if let Some(d) = &dao.discourse {
                check_url(&d.url).with_context(|| at("discourse.url"))?;
            }
            if let Some(o) = &dao.onchain {
                check_url(&o.rpc_url).with_context(|| at("onchain.rpc_url"))?;
                for (field, value) in [("onchain.governor", &o.governor), ("onchain.token", &o.token)] {
                    if address::normalize(value).map(|a| a.len()) != Ok(42) {
                        bail!(at(&format!("{field} is not a 20-byte 0x address")));
                    }
                }
                if o.block_range == 0 {
                    bail!(at("onchain.block_range must be at least 1"));
                }
                if o.token_decimals > 77 {
                    bail!(at("onchain.token_decimals must be at most 77"));
                }
                let mut named = BTreeSet::new();
                for abi in &o.abis {
                    let a = address::normalize(&abi.address).ok().filter(|a| a.len() == 42);
                    let Some(a) = a else {
                        bail!(at(&format!("onchain.abis: `{}` is not a 20-byte 0x address", abi.address)));
                    };
                    if abi.file.trim().is_empty() {
                        bail!(at("onchain.abis: `file` is empty"));
                    }
                    if !named.insert(a) {
                        bail!(at(&format!("onchain.abis: {} is listed twice", abi.address)));
                    }
                }
            }
        }
        Ok(registry)
    }

    pub fn dao(&self, id: &str) -> Option<&DaoEntry> {
        self.daos.iter().find(|d| d.id == id)
    }
}

fn check_url(url: &str) -> anyhow::Result<()> {
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() < 10 {
        bail!("`{url}` is not an http(s) URL");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_registry_covers_the_sample_daos_with_their_spaces() {
        let registry = Registry::bundled();
        let ids: Vec<&str> = registry.daos.iter().map(|d| d.id.as_str()).collect();
        let sample: Vec<&str> = crate::sample::DEFAULT_REGISTRY.iter().map(|d| d.id).collect();
        assert_eq!(ids, sample);
        for d in crate::sample::DEFAULT_REGISTRY {
            let entry = registry.dao(d.id).unwrap();
            assert_eq!(entry.snapshot.as_ref().map(|s| s.space.as_str()), d.snapshot_space, "{}", d.id);
            assert_eq!(entry.symbol.as_deref(), Some(d.symbol));
            assert_eq!(entry.name, d.name);
        }
    }

    #[test]
    fn bad_registries_are_refused_with_the_reason() {
        let cases = [
            ("[[dao]]\nid = \"Bad Id\"\nname = \"x\"\n", "must be a slug"),
            ("[[dao]]\nid = \"a\"\nname = \"x\"\n[[dao]]\nid = \"a\"\nname = \"y\"\n", "listed twice"),
            ("[[dao]]\nid = \"a\"\nname = \"x\"\ncolour = 1\n", "not a valid registry"),
            ("[[dao]]\nid = \"a\"\nname = \"x\"\n[dao.discourse]\nurl = \"ftp://x.org\"\n", "discourse.url"),
            (
                "[[dao]]\nid = \"a\"\nname = \"x\"\n[dao.onchain]\nchain_id = 1\nrpc_url = \"http://127.0.0.1:8545\"\ngovernor = \"0x12\"\ntoken = \"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984\"\nstart_block = 0\n",
                "onchain.governor",
            ),
        ];
        for (text, expected) in cases {
            let error = format!("{:#}", Registry::parse(text, "test.toml").unwrap_err());
            assert!(error.contains(expected), "{error} should mention {expected}");
        }
        let abis = |entries: &str| {
            format!(
                "[[dao]]\nid = \"a\"\nname = \"x\"\n[dao.onchain]\nchain_id = 1\nrpc_url = \"http://127.0.0.1:8545\"\ngovernor = \"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984\"\ntoken = \"0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984\"\nstart_block = 0\nabis = [{entries}]\n"
            )
        };
        let uni = "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984";
        for (entries, expected) in [
            ("{ address = \"0x12\", file = \"a.json\" }".to_owned(), "not a 20-byte"),
            (format!("{{ address = \"{uni}\", file = \" \" }}"), "`file` is empty"),
            (format!("{{ address = \"{uni}\", path = \"a.json\" }}"), "not a valid registry"),
            (
                format!(
                    "{{ address = \"{uni}\", file = \"a.json\" }}, {{ address = \"{}\", file = \"b.json\" }}",
                    uni.to_lowercase()
                ),
                "listed twice",
            ),
        ] {
            let error = format!("{:#}", Registry::parse(&abis(&entries), "test.toml").unwrap_err());
            assert!(error.contains(expected), "{error} should mention {expected}");
        }
        // Files are read relative to the registry file, and refused when they hold no ABI.
        let dir = std::env::temp_dir().join(format!("govdata-registry-abis-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("abis")).unwrap();
        let registry = dir.join("registry.toml");
        std::fs::write(&registry, abis(&format!("{{ address = \"{uni}\", file = \"abis/t.json\" }}"))).unwrap();
        std::fs::write(dir.join("abis/t.json"), "{\"not\": \"an abi\"}").unwrap();
        let error = format!("{:#}", Registry::load(Some(&registry)).unwrap_err());
        assert!(error.contains("onchain.abis") && error.contains("not a JSON ABI"), "{error}");
        let abi = r#"{"abi": [{"type": "function", "name": "pay", "stateMutability": "nonpayable", "inputs": [{"name": "to", "type": "address"}], "outputs": []}]}"#;
        std::fs::write(dir.join("abis/t.json"), abi).unwrap();
        let loaded = Registry::load(Some(&registry)).unwrap();
        let file = &loaded.daos[0].onchain.as_ref().unwrap().abis[0];
        assert_eq!(file.file, dir.join("abis/t.json").display().to_string());
        assert_eq!(file.read().unwrap().1.functions().next().unwrap().name, "pay");
        std::fs::remove_dir_all(&dir).unwrap();
        let ok =
            Registry::parse("[[dao]]\nid = \"a-1\"\nname = \"x\"\n[dao.snapshot]\nspace = \"a.eth\"\n", "t").unwrap();
        assert_eq!(ok.daos[0].snapshot.as_ref().unwrap().hub, DEFAULT_HUB);
    }
}
