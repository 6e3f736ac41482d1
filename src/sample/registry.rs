//! The bundled default registry: the DAOs the sample covers, and how its rows map onto them.

/// One covered DAO. `symbol` is the governance token as both exports write it; a DAO appears in
/// the Snapshot files through its space and in the Tally export through its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryDao {
    /// The public daoId slug.
    pub id: &'static str,
    pub name: &'static str,
    pub symbol: &'static str,
    pub snapshot_space: Option<&'static str>,
    /// Whether the Tally delegates export uses `symbol` for this DAO.
    pub on_tally: bool,
}

const fn dao(
    id: &'static str,
    name: &'static str,
    symbol: &'static str,
    space: Option<&'static str>,
    on_tally: bool,
) -> RegistryDao {
    RegistryDao { id, name, symbol, snapshot_space: space, on_tally }
}

/// The default registry a fresh store starts with.
pub const DEFAULT_REGISTRY: &[RegistryDao] = &[
    dao("uniswap", "Uniswap", "UNI", Some("uniswapgovernance.eth"), true),
    dao("arbitrum", "Arbitrum DAO", "ARB", Some("arbitrumfoundation.eth"), true),
    dao("lido", "Lido DAO", "LDO", Some("lido-snapshot.eth"), false),
    dao("compound", "Compound", "COMP", Some("comp-vote.eth"), true),
    dao("dimo", "DIMO", "DIMO", Some("dimo.eth"), false),
    dao("weatherxm", "WeatherXM", "WXM", Some("weatherxm.eth"), false),
    dao("aave", "Aave", "AAVE", None, true),
    dao("optimism", "Optimism", "OP", None, true),
];

/// The DAO governed in the Snapshot space `space`.
pub fn by_space(space: &str) -> Option<&'static RegistryDao> {
    DEFAULT_REGISTRY.iter().find(|d| d.snapshot_space == Some(space))
}

/// The DAO a Tally export row with token `symbol` belongs to.
pub fn by_tally_symbol(symbol: &str) -> Option<&'static RegistryDao> {
    DEFAULT_REGISTRY.iter().find(|d| d.on_tally && d.symbol == symbol)
}
