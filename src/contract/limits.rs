//! Page sizes and time windows: every bound of the public contract, declared once.
//! v1 clamps values beyond a bound (and records it); v2 rejects them with VALIDATION_ERROR.

/// Rows per page of one kind of list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize {
    pub default: u32,
    pub max: u32,
}

/// Default page size when `limit` is absent (both surfaces).
pub const DEFAULT_PAGE_SIZE: u32 = 25;

/// Most lists.
pub const MOST_LISTS: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 100 };
/// Events (`/v1/governance-events`, `/v2/events`).
pub const EVENTS: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 200 };
/// Proposal votes (`/v2/proposals/{proposalKey}/votes`).
pub const PROPOSAL_VOTES: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 500 };
/// Proposal actions (`/v2/proposals/{proposalKey}/actions`): fewer rows than most lists at most,
/// because each action carries its decoded call, and a timelock batch or a Safe transaction holds
/// its inner calls (each with its calldata) inside it.
pub const PROPOSAL_ACTIONS: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 50 };
/// Every page size above: what bounds a page anywhere (`store::plans` writes bounds up to the
/// largest into statements). A page size declared above belongs here too.
pub const PAGE_SIZES: [PageSize; 4] = [MOST_LISTS, EVENTS, PROPOSAL_VOTES, PROPOSAL_ACTIONS];
/// The actions `GET /v2/proposals/{proposalKey}` carries inline (the first ones, in position
/// order): most proposals have fewer, so the detail usually holds them all; a proposal with more
/// says how many it has and where to read the rest (`/v2/proposals/{proposalKey}/actions`).
pub const PROPOSAL_DETAIL_ACTIONS: u64 = 10;

/// The longest time window a list accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub max_days: u32,
}

impl Window {
    pub const fn max_ms(self) -> i64 {
        self.max_days as i64 * 86_400_000
    }
}

/// Events and signals.
pub const EVENTS_AND_SIGNALS_WINDOW: Window = Window { max_days: 90 };
/// Proposals and voter history.
pub const PROPOSALS_AND_HISTORY_WINDOW: Window = Window { max_days: 365 };

/// A list's page-size declaration, as a type so parameter types can carry it into the document.
pub trait PageSizeDecl: Send + Sync + 'static {
    const SIZE: PageSize;
    /// Name used in the document's schema names.
    const NAME: &'static str;
}

#[derive(Debug)]
pub struct MostLists;
impl PageSizeDecl for MostLists {
    const SIZE: PageSize = MOST_LISTS;
    const NAME: &'static str = "MostLists";
}

#[derive(Debug)]
pub struct Events;
impl PageSizeDecl for Events {
    const SIZE: PageSize = EVENTS;
    const NAME: &'static str = "Events";
}

#[derive(Debug)]
pub struct ProposalVotes;
impl PageSizeDecl for ProposalVotes {
    const SIZE: PageSize = PROPOSAL_VOTES;
    const NAME: &'static str = "ProposalVotes";
}

#[derive(Debug)]
pub struct ProposalActions;
impl PageSizeDecl for ProposalActions {
    const SIZE: PageSize = PROPOSAL_ACTIONS;
    const NAME: &'static str = "ProposalActions";
}

/// Proposal lookup, items and evidence (`/v1/proposals/lookup`, `/v1/items/…`, `…/evidence`).
pub mod lookup {
    /// Alternatives listed beside the best match of a lookup.
    pub const ALTERNATIVES: usize = 5;
    /// Title lookup: rows the full-text index returns (ranked by bm25 on SQLite, `ts_rank` on
    /// PostgreSQL) before confidence is computed and the final order applied.
    pub const TITLE_CANDIDATES: u64 = 100;
    /// Title lookup: words of the query used; further words are ignored.
    pub const TITLE_MAX_WORDS: usize = 16;
    /// Title lookup confidence, a documented rule over word overlap (never a backend score):
    /// `QUERY_WEIGHT × (query words found in the title ÷ query words)
    ///  + TITLE_WEIGHT × (title words matched by a query word ÷ title words)`,
    /// a query word matching every title word it is a prefix of; rounded half-even to
    /// `CONFIDENCE_DECIMALS`. URL and external-id matches have confidence 1.
    pub const CONFIDENCE_QUERY_WEIGHT: &str = "0.8";
    pub const CONFIDENCE_TITLE_WEIGHT: &str = "0.2";
    pub const CONFIDENCE_DECIMALS: i64 = 4;
    /// Title lookup: a query word may reach the beginning of a title word through typos, as many
    /// edits (a letter substituted, inserted or dropped, two neighbours swapped) as its length
    /// allows: `(shortest word length, edits)`, longest first; shorter words must match exactly.
    /// A word matched through `e` edits counts `1 - e / its letters` instead of 1 in both shares.
    pub const TYPO_EDITS: &[(usize, usize)] = &[(8, 2), (4, 1)];
    /// Title lookup: the lowest confidence answered. A best title match below it is no match:
    /// 404 NOT_FOUND whose `candidates` lists the closest titles (URL and external-id matches
    /// are exact and never below it).
    pub const CONFIDENCE_FLOOR: &str = "0.6";
    /// Title lookup: how clearly the best match must stand above every other title found to be
    /// answered, beside the floor. Confidence rewards a short title (its second term is the share
    /// of the title's words the query matched), so between titles that each hold every query word
    /// it measures overlap, not identification: a common word fits dozens of titles and the
    /// shortest would win. The best is answered only when, against each other candidate, the
    /// query's words fit it at least this much better (query words found ÷ query words, typos
    /// counted as in the confidence), or fit it at least as well while the query names every word
    /// of its title and not every word of the other's (the whole title given). Otherwise 404
    /// NOT_FOUND with `candidates`, never a guess. Proposals with the same title in the same DAO
    /// (a proposal posted twice, or in two sources) do not compete: no title tells them apart, and
    /// they are listed in `alternatives`. A query word fits every title holding it equally, so only
    /// typos and missing words make a difference; 0.02 is a fiftieth of the query, below one edit
    /// in one word of a two-word query (≥ 0.038 for words of up to 13 letters).
    pub const TITLE_MARGIN: &str = "0.02";
    /// Title lookup: a title word is common in its DAO, and identifies nothing, when more than
    /// this share of the DAO's titles hold it (and more than one: a word of one title names that
    /// title alone, however few titles the DAO has). Always common are the words every title of
    /// the DAO stands for without holding them: its id, names and ticker, and `proposal`. Above a fifth sit a DAO's title templates and function words (on the bundled
    /// sample: Uniswap's `temp check`, Compound's `adopt an OEV solution on … 2025 RFP`, DIMO's
    /// `DIP … amendment`, WeatherXM's `WIP`, `the`, `to`); every topic word sits below it (18% at
    /// most), so a fifth sets the templates aside and keeps every word that tells titles apart.
    /// A query none of whose words identifies its best title is 404 NOT_FOUND with `candidates`
    /// (`rules::lookup::identification`).
    pub const COMMON_WORD_SHARE: &str = "0.2";
    /// Title lookup below the floor: candidates listed in the 404, closest first.
    pub const CLOSEST_CANDIDATES: usize = 5;
    /// Title lookup when no title has every word: candidates come from trigram indexes (SQLite
    /// FTS5 `trigram`, PostgreSQL `pg_trgm`), titles holding the most of the query words'
    /// three-letter pieces first; at most this many pieces of the query are looked up.
    pub const TITLE_MAX_TRIGRAMS: usize = 48;
    /// Items: rows an external id may match before the answer is AMBIGUOUS_IDENTIFIER; candidates listed.
    pub const ITEM_CANDIDATES: u64 = 20;
    /// Characters of a forum topic's first post shown as its excerpt.
    pub const EXCERPT_CHARS: usize = 500;
    /// Evidence: the largest votes listed (by voting power).
    pub const EVIDENCE_LARGEST_VOTES: usize = 10;
    /// Evidence: governance events of the proposal in its timeline.
    pub const EVIDENCE_EVENTS: u64 = 100;
    /// Evidence: linked forum topics listed.
    pub const EVIDENCE_TOPICS: u64 = 20;
}

/// Proposal actions (issue 47): how deep calls that carry calls (timelock `schedule`/`execute`
/// and their batches, Safe `execTransaction`, MultiSend, the Governor's `relay`) are decoded. A
/// proposal's own action is depth 0 and a wrapper's inner calls are one deeper; a wrapper at
/// this depth says so instead of decoding its calls. The deepest real chain seen is four
/// wrappers, each call below the one before (`relay` → Safe `execTransaction` → MultiSend →
/// timelock `scheduleBatch` → the call), so 4 decodes every one of them; a bound is needed at
/// all because decoding recurses (stack) and each level repeats its inner calldata in the
/// answer, so crafted calldata nesting thousands of levels would cost depth × size.
pub const ACTION_NESTING_DEPTH: usize = 4;

/// The longest one-line summary of a proposal action, in characters: past it the summary is cut
/// and ends with `…`. A call's arguments may hold any number of array elements and any length
/// of string (bounded only by the calldata), and a summary is for reading at a glance; the
/// arguments stay whole beside it.
pub const ACTION_SUMMARY_MAX_CHARS: usize = 500;

/// Proposal actions: what ingestion learns about the contracts a proposal calls, kept per
/// (chain, address) in the store and asked again only when due. A contract's verified ABI on
/// Sourcify is kept for good (verified code does not change); a contract Sourcify does not
/// verify is asked again after [`SOURCIFY_UNVERIFIED_RETRY`] (it may be verified since), and a
/// lookup that failed (Sourcify down, slow, or answering what is not its API) after
/// [`SOURCIFY_FAILED_RETRY`].
pub const SOURCIFY_UNVERIFIED_RETRY: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3_600);
/// See [`SOURCIFY_UNVERIFIED_RETRY`].
pub const SOURCIFY_FAILED_RETRY: std::time::Duration = std::time::Duration::from_secs(3_600);
/// An ERC-20's `decimals()` and `symbol()` are kept for good; a contract that does not answer
/// them (not an ERC-20) is asked again after this long.
pub const TOKEN_NOT_ERC20_RETRY: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3_600);
/// Contracts one connector run examines for decoding (proxy slots read, Sourcify asked when
/// configured and due), at most: a proposal of thousands of calls must not hold a run for
/// long. Contracts beyond are decoded with what is known already.
pub const CONTRACT_LOOKUPS_PER_RUN: usize = 64;
/// Tokens whose `decimals()` and `symbol()` one connector run reads, at most.
pub const TOKEN_LOOKUPS_PER_RUN: usize = 32;

/// Blocks after which a proposal's kept simulation is done again even though its state has not
/// changed (a proposal's state changing redoes it at once): about an hour of Ethereum mainnet
/// blocks, so that what a simulation shows of other contracts' state (balances, roles) is never
/// much older than that, and an unchanged proposal costs the node one simulation an hour.
pub const SIMULATION_REDO_BLOCKS: u64 = 300;

/// State reads (an account, a storage slot or a block hash, each one JSON-RPC request, an account
/// three) one simulation may ask the node for: past it, the simulation stops and says so instead
/// of showing a result. A token transfer reads about ten; a proposal of large batches a few
/// hundred; 5,000 bounds what one proposal costs the node.
pub const SIMULATION_STATE_READS: u64 = 5_000;

/// The longest one simulation may take, in seconds, its reads included: past it, it stops and
/// says so.
pub const SIMULATION_TIMEOUT_SECS: u64 = 120;

/// The gas each simulated action may use: a block's worth of Ethereum mainnet gas (above the
/// EIP-7825 cap of a sent transaction, which binds a transaction, not one call of a batch).
pub const SIMULATION_GAS_PER_ACTION: u64 = 45_000_000;
