//! Whole-table exports (issue 30), declared once: the formats, and each exported table with its
//! columns, their types and meanings. The writers (`exports`), the schema document and the
//! files' own metadata all read these declarations.
//!
//! Types are chosen so that exact values survive every reader: voting power is the exact decimal
//! text received (with the float-origin flag kept beside it), a wei integer is also a
//! `DECIMAL(38,0)` in Parquet, timestamps are UTC with milliseconds, and ids are the
//! public ids the API serves.
use poem_openapi::Enum;

use super::vocabulary::vocabulary;

vocabulary! {
    /// A file format of the exports.
    #[derive(Enum)]
    #[oai(rename_all = "lowercase")]
    ExportFormat ("export format") {
        /// Apache Parquet: typed columns, row groups, readable column by column over HTTP ranges.
        Parquet = "parquet",
        /// CSV per RFC 4180: a header row, CRLF line ends, fields quoted when needed.
        Csv = "csv",
        /// One JSON object per line (NDJSON), exact values as strings.
        Ndjson = "ndjson",
    }
}

impl ExportFormat {
    /// The media type a file of this format is served as.
    pub const fn media_type(self) -> &'static str {
        match self {
            Self::Parquet => "application/vnd.apache.parquet",
            Self::Csv => "text/csv; charset=utf-8; header=present",
            Self::Ndjson => "application/x-ndjson",
        }
    }
}

/// How long a download waits for its file to be built before answering 503 with `Retry-After`
/// (the build goes on; the file is ready for a later request).
pub const BUILD_WAIT_SECONDS: u64 = 10;
/// How long the grant an x402-paid download answers with opens further requests for the same
/// file (a Parquet reader's range requests, a resumed download) without another payment.
pub const GRANT_SECONDS: u64 = 600;
/// The response header that carries a paid download's grant, and the request header that
/// presents it again.
pub const GRANT_HEADER: &str = "export-grant";
/// What an export grant's tag is for (`CursorCodec::tag`).
const GRANT_PURPOSE: &str = "export-grant";

/// The grant for `path` (`/v2/exports/{daoId}/{file}`) until `expires_ms`: `<expires_ms>.<tag>`.
pub fn grant(codec: &super::cursor::CursorCodec, path: &str, expires_ms: i64) -> String {
    format!("{expires_ms}.{}", codec.tag(GRANT_PURPOSE, &format!("{path}\n{expires_ms}")))
}

/// Whether `sent` is a grant the service issued for `path` that has not expired at `now_ms`.
pub fn grant_opens(codec: &super::cursor::CursorCodec, path: &str, sent: &str, now_ms: i64) -> bool {
    let Some((expires, tag)) = sent.trim().split_once('.') else { return false };
    let Ok(expires_ms) = expires.parse::<i64>() else { return false };
    now_ms < expires_ms && codec.tag_matches(GRANT_PURPOSE, &format!("{path}\n{expires_ms}"), tag)
}

/// The disk the export files may take by default, in MiB (`GOVDATA_EXPORT_BUDGET_MB`).
pub const DEFAULT_BUDGET_MB: u64 = 10_240;

/// How long a client waits before asking again for a file being built.
pub const BUILD_RETRY_AFTER_SECONDS: u64 = 5;

/// The 503 of a file still being built after [`BUILD_WAIT_SECONDS`].
pub fn being_built(dao_id: &str, file: &str) -> super::errors::Problem {
    let mut p = super::errors::Problem::new(
        super::errors::ErrorCode::Unavailable,
        format!(
            "The file {file} of {dao_id} is being built for the DAO's serving revision; ask again after \
             `Retry-After` ({BUILD_RETRY_AFTER_SECONDS} s). Nothing was charged."
        ),
    );
    p.retry_after_s = Some(BUILD_RETRY_AFTER_SECONDS);
    p
}

/// The example body of that 503, in the document.
pub fn being_built_example() -> super::errors::Problem {
    being_built("uniswap", "votes.parquet")
}

/// One downloadable file of a DAO: a table in a format (`votes.parquet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportFile {
    pub table: &'static ExportTable,
    pub format: ExportFormat,
}

impl ExportFile {
    /// The file named `<table>.<format>`.
    pub fn parse(name: &str) -> Option<Self> {
        let (table, format) = name.rsplit_once('.')?;
        Self::of(table, format)
    }

    pub fn of(table: &str, format: &str) -> Option<Self> {
        Some(Self { table: self::table(table)?, format: ExportFormat::parse(format).ok()? })
    }

    pub fn name(&self) -> String {
        format!("{}.{}", self.table.name, self.format.as_str())
    }

    /// Every file of a DAO, tables in declared order, then formats.
    pub fn all() -> impl Iterator<Item = Self> {
        TABLES.iter().flat_map(|table| ExportFormat::ALL.iter().map(move |format| Self { table, format: *format }))
    }

    /// The pattern a file name matches (the documented parameter's).
    pub fn pattern() -> String {
        let tables: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
        let formats: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.as_str()).collect();
        format!("^({})\\.({})$", tables.join("|"), formats.join("|"))
    }

    /// Whether the format is text, served gzip-encoded on request.
    pub fn is_text(&self) -> bool {
        self.format != ExportFormat::Parquet
    }
}

/// The type of an exported column, as every format carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// UTF-8 text.
    Text,
    /// A 64-bit signed integer.
    Integer,
    Boolean,
    /// An instant: Parquet `TIMESTAMP(MILLIS, UTC)`; text formats RFC 3339 UTC with milliseconds.
    Timestamp,
    /// An exact decimal number as text, exactly as received (never a float).
    DecimalText,
    /// An unsigned integer in a token's smallest unit: Parquet `DECIMAL(38,0)`, the widest
    /// decimal polars, DuckDB and Spark read exactly (10^38 smallest units is 10^20 whole tokens
    /// at 18 decimals, past any real supply; a larger value fails the file's build loudly rather
    /// than being rounded); text formats its decimal digits.
    Wei,
}

impl ColumnType {
    /// The name the schema document gives the type.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Text => "string",
            Self::Integer => "int64",
            Self::Boolean => "boolean",
            Self::Timestamp => "timestamp[ms, UTC]",
            Self::DecimalText => "decimal-string",
            Self::Wei => "decimal(38,0)",
        }
    }
}

/// One column of an exported table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportColumn {
    pub name: &'static str,
    pub ty: ColumnType,
    pub nullable: bool,
    pub meaning: &'static str,
}

/// One exported table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportTable {
    pub name: &'static str,
    pub meaning: &'static str,
    /// The order rows are written in (stable across runs, so an unchanged table writes the same
    /// bytes).
    pub order: &'static str,
    pub columns: &'static [ExportColumn],
}

const fn col(name: &'static str, ty: ColumnType, nullable: bool, meaning: &'static str) -> ExportColumn {
    ExportColumn { name, ty, nullable, meaning }
}

pub const VOTES: ExportTable = ExportTable {
    name: "votes",
    meaning: "Every vote held for the DAO's proposals (Snapshot and on-chain), one row per voter and proposal.",
    order: "proposal (oldest first), then voter address",
    columns: &[
        col("dao_id", ColumnType::Text, false, "The DAO's slug."),
        col(
            "proposal_key",
            ColumnType::Text,
            false,
            "The proposal's public key (`p_…`), as `/v2/proposals/{proposalKey}` takes it.",
        ),
        col("proposal_source", ColumnType::Text, false, "`snapshot` or `onchain`."),
        col(
            "proposal_external_id",
            ColumnType::Text,
            false,
            "The upstream id: Snapshot's proposal id, or the on-chain proposal id in decimal.",
        ),
        col("voter", ColumnType::Text, false, "The voter's lowercase 0x address."),
        col("choice", ColumnType::Text, false, "The choice exactly as recorded upstream: `1`, `[1,3]`, `{\"2\":1}`."),
        col(
            "voting_power",
            ColumnType::DecimalText,
            false,
            "The vote's voting power, the exact text received (Snapshot: token units; on-chain: the integer in the token's smallest unit).",
        ),
        col(
            "voting_power_from_float",
            ColumnType::Boolean,
            false,
            "True when the upstream served the power as a binary float (Snapshot `vp`): exact as received, but possibly rounded upstream.",
        ),
        col(
            "voting_power_wei",
            ColumnType::Wei,
            true,
            "For on-chain votes, the same power as an integer in the token's smallest unit; null for Snapshot votes.",
        ),
        col("reason", ColumnType::Text, true, "The voter's stated reason, when given."),
        col(
            "created_at",
            ColumnType::Timestamp,
            false,
            "When the vote was cast (Snapshot `created`; on-chain: the block's time).",
        ),
        col("tx_hash", ColumnType::Text, true, "The casting transaction, for on-chain votes."),
        col("block_number", ColumnType::Integer, true, "The casting block, for on-chain votes."),
        col("ipfs", ColumnType::Text, true, "The vote's IPFS receipt, for Snapshot votes."),
    ],
};

/// The DAO's slug, first column of every table.
const DAO_ID: ExportColumn = col("dao_id", ColumnType::Text, false, "The DAO's slug.");

pub const DAOS: ExportTable = ExportTable {
    name: "daos",
    meaning: "The DAO's registry entry with its published counts: one row.",
    order: "one row",
    columns: &[
        DAO_ID,
        col("name", ColumnType::Text, false, "The DAO's display name."),
        col("symbol", ColumnType::Text, true, "The governance token's symbol (UNI, ARB, ...)."),
        col("snapshot_space", ColumnType::Text, true, "The DAO's Snapshot space, when it votes on Snapshot."),
        col("discourse_url", ColumnType::Text, true, "The base URL of the DAO's Discourse forum."),
        col("chain_id", ColumnType::Integer, true, "The EVM chain id of the DAO's governor and token."),
        col("governor", ColumnType::Text, true, "The governor contract's address, as the registry records it."),
        col("token", ColumnType::Text, true, "The governance token contract's address, as the registry records it."),
        col(
            "status",
            ColumnType::Text,
            false,
            "`ingested`, or `registry_only` when nothing has been ingested yet (the counts are then null).",
        ),
        col("proposals", ColumnType::Integer, true, "Proposals held for the DAO."),
        col("active_proposals", ColumnType::Integer, true, "Proposals whose voting is open."),
        col(
            "upstream_votes",
            ColumnType::Integer,
            true,
            "Votes cast according to the upstream (each proposal's upstream vote count, summed); may exceed `ingested_votes`.",
        ),
        col("ingested_votes", ColumnType::Integer, true, "Votes held in this store (the rows of the `votes` table)."),
        col("voters", ColumnType::Integer, true, "Distinct addresses with at least one ingested vote in the DAO."),
        col("delegates", ColumnType::Integer, true, "Delegates with on-chain voting power on record."),
        col("forum_topics", ColumnType::Integer, true, "Forum topics held for the DAO."),
        col(
            "data_as_of",
            ColumnType::Timestamp,
            true,
            "The DAO's ingestion watermark: the newest of its sources' watermarks; null when nothing has been ingested.",
        ),
    ],
};

pub const PROPOSALS: ExportTable = ExportTable {
    name: "proposals",
    meaning: "Every proposal of the DAO, Snapshot and on-chain, with its upstream tallies.",
    order: "creation time (oldest first), then the proposal's row order",
    columns: &[
        DAO_ID,
        col(
            "proposal_key",
            ColumnType::Text,
            false,
            "The proposal's public key (`p_…`), as `/v2/proposals/{proposalKey}` takes it.",
        ),
        col("source", ColumnType::Text, false, "`snapshot` or `onchain`."),
        col(
            "external_id",
            ColumnType::Text,
            false,
            "The upstream id: Snapshot's proposal id, or the on-chain proposal id in decimal.",
        ),
        col("title", ColumnType::Text, false, "The proposal's title."),
        col("body", ColumnType::Text, true, "The proposal's full text, when known (the bundled sample carries none)."),
        col("author", ColumnType::Text, false, "The author's lowercase 0x address."),
        col(
            "voting_type",
            ColumnType::Text,
            true,
            "Snapshot's voting type (`single-choice`, `basic`, `approval`, `weighted`, `quadratic`, `ranked-choice`, `copeland`) or `governor`.",
        ),
        col(
            "state",
            ColumnType::Text,
            false,
            "pending | active | closed | queued | executed | canceled | defeated | succeeded | expired.",
        ),
        col(
            "choices",
            ColumnType::Text,
            true,
            "The choice labels in upstream order (choice 1 first), as a JSON array of strings; null when unknown.",
        ),
        col(
            "scores",
            ColumnType::Text,
            true,
            "The upstream per-choice scores in choice order, as a JSON array of exact decimal strings; null when unknown.",
        ),
        col(
            "scores_total",
            ColumnType::DecimalText,
            true,
            "The upstream total score, the exact text received (Snapshot serves a float; on-chain: the integer in the token's smallest unit).",
        ),
        col(
            "scores_state",
            ColumnType::Text,
            true,
            "Snapshot's `scores_state` (`final`, `pending`): whether the scores are final.",
        ),
        col(
            "quorum",
            ColumnType::DecimalText,
            true,
            "The quorum, the exact text received (Snapshot: token units; on-chain: the governor's `quorum` in the token's smallest unit).",
        ),
        col(
            "top_choice_pct",
            ColumnType::DecimalText,
            true,
            "The leading choice's share in percent, as the upstream reported it.",
        ),
        col(
            "created_at",
            ColumnType::Timestamp,
            false,
            "When the proposal was created (the bundled sample has no creation time: its start).",
        ),
        col("start_at", ColumnType::Timestamp, true, "When voting opens."),
        col("end_at", ColumnType::Timestamp, true, "When voting closes."),
        col(
            "upstream_votes",
            ColumnType::Integer,
            true,
            "Votes cast according to the upstream (Snapshot `votes`); may exceed `ingested_votes`.",
        ),
        col(
            "ingested_votes",
            ColumnType::Integer,
            false,
            "Votes held in this store for the proposal (its rows in the `votes` table).",
        ),
        col("url", ColumnType::Text, true, "Where a person can open the proposal upstream."),
        col("discussion_url", ColumnType::Text, true, "The discussion link the proposal gives."),
        col("ipfs", ColumnType::Text, true, "The proposal's IPFS hash, for Snapshot proposals."),
        col(
            "snapshot_block",
            ColumnType::Text,
            true,
            "Where voting power was read: a block number, or a time in seconds when `clock_mode` says `mode=timestamp`.",
        ),
        col("tx_hash", ColumnType::Text, true, "The creating transaction, for on-chain proposals."),
        col("block_number", ColumnType::Integer, true, "The creating block, for on-chain proposals."),
        col(
            "counting_mode",
            ColumnType::Text,
            true,
            "An on-chain governor's `COUNTING_MODE()`, verbatim (e.g. `support=bravo&quorum=for,abstain`).",
        ),
        col("clock_mode", ColumnType::Text, true, "An on-chain governor's `CLOCK_MODE()`, verbatim."),
        col("privacy", ColumnType::Text, true, "Snapshot's `privacy`: `shutter` for shielded voting."),
        col(
            "origin",
            ColumnType::Text,
            false,
            "Where the record came from: `snapshot-sample-csv` (the bundled dataset), `snapshot-hub` or `governor-logs`.",
        ),
    ],
};

pub const VOTERS: ExportTable = ExportTable {
    name: "voters",
    meaning: "Every address that voted in the DAO, with its activity there.",
    order: "voter address",
    columns: &[
        DAO_ID,
        col("voter", ColumnType::Text, false, "The voter's lowercase 0x address (its `voterIdentity`)."),
        col(
            "address",
            ColumnType::Text,
            false,
            "The address for display: EIP-55 checksummed for a 20-byte address; a 32-byte (Starknet) address is lowercase.",
        ),
        col("ens", ColumnType::Text, true, "The voter's ENS name, when the store knows it."),
        col("name", ColumnType::Text, true, "The voter's display name, when an upstream gave one."),
        col("votes_cast", ColumnType::Integer, false, "Votes held here that the voter cast in the DAO."),
        col(
            "voting_power",
            ColumnType::DecimalText,
            false,
            "The voting power of the voter's most recent vote in the DAO, the exact text received.",
        ),
        col(
            "voting_power_from_float",
            ColumnType::Boolean,
            false,
            "True when the upstream served that power as a binary float (Snapshot `vp`): exact as received, but possibly rounded upstream.",
        ),
        col("first_vote_at", ColumnType::Timestamp, false, "When the voter's first vote held here was cast."),
        col("last_vote_at", ColumnType::Timestamp, false, "When the voter's most recent vote held here was cast."),
    ],
};

pub const DELEGATES: ExportTable = ExportTable {
    name: "delegates",
    meaning: "The delegates of the DAO's governance token with their delegated voting power.",
    order: "delegate address",
    columns: &[
        DAO_ID,
        col("address", ColumnType::Text, false, "The delegate's lowercase 0x address."),
        col("ens", ColumnType::Text, true, "The delegate's ENS name, when the store knows it."),
        col(
            "voting_power_raw",
            ColumnType::Wei,
            false,
            "The delegated voting power as an integer in the token's smallest unit.",
        ),
        col(
            "decimals",
            ColumnType::Integer,
            false,
            "The token's decimals: `voting_power_raw` ÷ 10^decimals is `voting_power`.",
        ),
        col("voting_power", ColumnType::DecimalText, false, "The delegated voting power in token units, exact."),
        col("delegators_count", ColumnType::Integer, true, "How many holders delegate to the delegate, when known."),
        col("origin", ColumnType::Text, false, "Where the record came from: `tally-sample-csv` or `governor-logs`."),
        col("as_of", ColumnType::Timestamp, false, "The time the voting power is as of."),
    ],
};

pub const DELEGATIONS: ExportTable = ExportTable {
    name: "delegations",
    meaning: "Whom each token holder delegates to now, as the token's last `DelegateChanged` event said.",
    order: "delegator address",
    columns: &[
        DAO_ID,
        col("delegator", ColumnType::Text, false, "The token holder's lowercase 0x address."),
        col(
            "delegate",
            ColumnType::Text,
            true,
            "The delegate's lowercase 0x address; null when the holder withdrew its delegation (the zero address on chain).",
        ),
        col("block_number", ColumnType::Integer, false, "The block of the event that set the delegation."),
    ],
};

pub const DELEGATION_CHANGES: ExportTable = ExportTable {
    name: "delegation_changes",
    meaning: "Every `DelegateChanged` event of the DAO's token: a holder moving its votes from one delegate to another.",
    order: "place on chain: block number, then log index",
    columns: &[
        DAO_ID,
        col(
            "delegation_id",
            ColumnType::Text,
            false,
            "The change's public id (`dl_…`), derived from its DAO, block and log index.",
        ),
        col("delegator", ColumnType::Text, false, "The holder's lowercase 0x address."),
        col("from_delegate", ColumnType::Text, true, "The delegate the holder left; null when it had none."),
        col(
            "to_delegate",
            ColumnType::Text,
            true,
            "The delegate the holder chose; null when it withdrew its delegation.",
        ),
        col(
            "power_moved_raw",
            ColumnType::Wei,
            false,
            "The voting units that moved with the change (the holder's balance then), an integer in the token's smallest unit; 0 when none moved.",
        ),
        col("decimals", ColumnType::Integer, false, "The token's decimals."),
        col(
            "supply_raw",
            ColumnType::Wei,
            true,
            "For a notable change only: the token's total supply at the block, an integer in its smallest unit; null otherwise.",
        ),
        col("block_number", ColumnType::Integer, false, "The event's block."),
        col("log_index", ColumnType::Integer, false, "The event's log index in its block."),
        col("tx_hash", ColumnType::Text, false, "The event's transaction."),
        col("at", ColumnType::Timestamp, false, "The block's time."),
    ],
};

pub const POWER_CHECKPOINTS: ExportTable = ExportTable {
    name: "power_checkpoints",
    meaning: "Every `DelegateVotesChanged` event of the DAO's token: one delegate's voting power before and after, with its cause.",
    order: "place on chain: block number, then log index",
    columns: &[
        DAO_ID,
        col("delegate", ColumnType::Text, false, "The lowercase 0x address of the delegate whose power changed."),
        col(
            "previous_power_raw",
            ColumnType::Wei,
            false,
            "The delegate's voting power before the change, an integer in the token's smallest unit.",
        ),
        col(
            "power_raw",
            ColumnType::Wei,
            false,
            "The delegate's voting power after the change, an integer in the token's smallest unit.",
        ),
        col("decimals", ColumnType::Integer, false, "The token's decimals."),
        col(
            "cause",
            ColumnType::Text,
            false,
            "`delegation` (a holder delegated or withdrew) or `transfer` (tokens moved between holders with different delegates).",
        ),
        col(
            "cause_delegator",
            ColumnType::Text,
            true,
            "For a `delegation`: the lowercase 0x address of the holder who delegated or withdrew.",
        ),
        col("block_number", ColumnType::Integer, false, "The event's block."),
        col("log_index", ColumnType::Integer, false, "The event's log index in its block."),
        col("tx_hash", ColumnType::Text, false, "The event's transaction."),
        col("at", ColumnType::Timestamp, false, "The block's time."),
    ],
};

pub const GOVERNANCE_EVENTS: ExportTable = ExportTable {
    name: "governance_events",
    meaning: "The DAO's dated governance events about its proposals and forum topics: created, voting opened, notable votes, closed, queued, executed, canceled, topics opened (delegation changes are the `delegation_changes` table).",
    order: "occurrence time (oldest first), then the event's row order",
    columns: &[
        DAO_ID,
        col(
            "event_id",
            ColumnType::Text,
            false,
            "The event's public id (`ev_…`), derived from what the event is: the same across publications and stores.",
        ),
        col("kind", ColumnType::Text, false, "What happened (`proposal_created`, `vote_cast`, ...)."),
        col("occurred_at", ColumnType::Timestamp, false, "When it happened."),
        col("subject_kind", ColumnType::Text, false, "What the event is about: `proposal` or `forum_topic`."),
        col(
            "subject_source",
            ColumnType::Text,
            false,
            "The subject's source: `snapshot` or `onchain` for proposals, `discourse` for forum topics.",
        ),
        col("subject_external_id", ColumnType::Text, false, "The subject's upstream id."),
        col(
            "subject_key",
            ColumnType::Text,
            true,
            "The subject's public key (`p_…` or `t_…`), when the subject is held here.",
        ),
        col("actor", ColumnType::Text, true, "Who acted: the author, the voter, the topic's author."),
        col("url", ColumnType::Text, true, "Where the event is recorded upstream."),
        col("snapshot_id", ColumnType::Text, true, "The Snapshot id of the record, for Snapshot events."),
        col("tx_hash", ColumnType::Text, true, "The transaction, for on-chain events."),
        col("block_number", ColumnType::Integer, true, "The block, for on-chain events."),
        col(
            "details",
            ColumnType::Text,
            true,
            "Event-specific exact values as a JSON object of strings (`votingPower`, `choice`, `state`, `scoresTotal`, ...), as stored; null when none.",
        ),
    ],
};

pub const SIGNALS: ExportTable = ExportTable {
    name: "signals",
    meaning: "The curated signals the rules raised for the DAO, each with the evidence that triggered it.",
    order: "detection time (oldest first), then the signal's row order",
    columns: &[
        DAO_ID,
        col(
            "signal_id",
            ColumnType::Text,
            false,
            "The signal's public id (`sg_…`), derived from what the signal is: the same across publications and stores.",
        ),
        col("kind", ColumnType::Text, false, "The rule that raised it (`close_race`, ...)."),
        col("severity", ColumnType::Text, false, "The rule's severity: `info`, `notice`, `warning` or `critical`."),
        col("subject_kind", ColumnType::Text, false, "What the signal is about: `proposal` or `forum_topic`."),
        col(
            "subject_source",
            ColumnType::Text,
            false,
            "The subject's source: `snapshot` or `onchain` for proposals, `discourse` for forum topics.",
        ),
        col("subject_external_id", ColumnType::Text, false, "The subject's upstream id."),
        col(
            "subject_key",
            ColumnType::Text,
            true,
            "The subject's public key (`p_…` or `t_…`), when the subject is held here.",
        ),
        col("detected_at", ColumnType::Timestamp, false, "The data time the rule raised it at."),
        col("summary", ColumnType::Text, false, "One line for a reader."),
        col(
            "evidence",
            ColumnType::Text,
            false,
            "The exact numbers that triggered it and their citations, as a JSON object with numbers as strings, as stored.",
        ),
    ],
};

pub const FORUM_TOPICS: ExportTable = ExportTable {
    name: "forum_topics",
    meaning: "The DAO's Discourse forum topics.",
    order: "creation time (oldest first), then the topic's row order",
    columns: &[
        DAO_ID,
        col(
            "topic_key",
            ColumnType::Text,
            false,
            "The topic's public key (`t_…`), as `/v2/topics/{topicKey}` takes it.",
        ),
        col("external_id", ColumnType::Text, false, "The Discourse topic id."),
        col("title", ColumnType::Text, false, "The topic's title."),
        col("slug", ColumnType::Text, false, "The topic's URL slug."),
        col("url", ColumnType::Text, false, "The topic's URL."),
        col("category_id", ColumnType::Integer, true, "The Discourse category id, when known."),
        col(
            "tags",
            ColumnType::Text,
            true,
            "The topic's tags as a JSON array of strings; null when none were recorded.",
        ),
        col("author", ColumnType::Text, true, "The author's username, when known."),
        col("posts_count", ColumnType::Integer, false, "Posts in the topic, as Discourse counts them."),
        col("reply_count", ColumnType::Integer, false, "Replies, as Discourse counts them."),
        col("views", ColumnType::Integer, false, "Views, as Discourse counts them."),
        col("like_count", ColumnType::Integer, false, "Likes, as Discourse counts them."),
        col("excerpt", ColumnType::Text, true, "The beginning of the opening post, as Discourse served it."),
        col("created_at", ColumnType::Timestamp, false, "When the topic was opened."),
        col("last_posted_at", ColumnType::Timestamp, true, "When the topic's latest post was made."),
        col("closed", ColumnType::Boolean, false, "Whether the topic is closed."),
        col("archived", ColumnType::Boolean, false, "Whether the topic is archived."),
        col(
            "linked_proposal_key",
            ColumnType::Text,
            true,
            "The public key (`p_…`) of the proposal the topic discusses, when linked.",
        ),
    ],
};

pub const PROPOSAL_ACTIONS: ExportTable = ExportTable {
    name: "proposal_actions",
    meaning: "What each proposal of the DAO would do: its actions as proposed (one row per action), each with the answer decoded when it was ingested, as `/v2/proposals/{proposalKey}/actions` serves it.",
    order: "proposal (oldest first, as in `proposals`), then the action's position",
    columns: &[
        DAO_ID,
        col(
            "proposal_key",
            ColumnType::Text,
            false,
            "The proposal's public key (`p_…`), as `/v2/proposals/{proposalKey}` takes it.",
        ),
        col("proposal_source", ColumnType::Text, false, "`snapshot` or `onchain`."),
        col(
            "proposal_external_id",
            ColumnType::Text,
            false,
            "The upstream id: Snapshot's proposal id, or the on-chain proposal id in decimal.",
        ),
        col(
            "position",
            ColumnType::Integer,
            false,
            "The action's place in the proposal's arrays, from 0: the order in which it executes.",
        ),
        col(
            "execution_path",
            ColumnType::Text,
            false,
            "How the proposal executes its actions: `governor` (through its timelock where it has one), or another executor; an open set.",
        ),
        col("target", ColumnType::Text, false, "The target as proposed: a lowercase 0x address."),
        col(
            "value_wei",
            ColumnType::DecimalText,
            false,
            "The wei the call sends, as proposed, exact decimal text (a text column, not a decimal: a proposal may propose any 256-bit value).",
        ),
        col(
            "signature",
            ColumnType::Text,
            true,
            "The signature string the proposer gave (Compound Bravo), when it gave one: `calldata` then holds the arguments only.",
        ),
        col("calldata", ColumnType::Text, false, "The calldata as proposed: 0x-hex, lower case."),
        col(
            "function_signature",
            ColumnType::Text,
            true,
            "The decoded function's canonical signature (`transfer(address,uint256)`); null when the calldata was not decoded (empty, unknown or ambiguous selector, malformed).",
        ),
        col(
            "summary",
            ColumnType::Text,
            true,
            "The action in one deterministic line (`transfer 1,250,000 UNI from the timelock to 0x…`); null only when the stored answer cannot be read.",
        ),
        col(
            "decoded",
            ColumnType::Text,
            false,
            "The whole decoded answer as a JSON object, as stored: the `decoded` member `/v2/proposals/{proposalKey}/actions` serves (its schema `Action` in `/v2/openapi.json`), inner calls included.",
        ),
    ],
};

/// Every exported table.
pub const TABLES: &[ExportTable] = &[
    VOTES,
    DAOS,
    PROPOSALS,
    VOTERS,
    DELEGATES,
    DELEGATIONS,
    DELEGATION_CHANGES,
    POWER_CHECKPOINTS,
    GOVERNANCE_EVENTS,
    SIGNALS,
    FORUM_TOPICS,
    PROPOSAL_ACTIONS,
];

/// The declaration of table `name`.
pub fn table(name: &str) -> Option<&'static ExportTable> {
    TABLES.iter().find(|t| t.name == name)
}

/// A table's machine-readable schema: its columns, their types and meanings (JSON), as the
/// schema document publishes it and each Parquet file carries it in its metadata.
pub fn schema_json(t: &ExportTable) -> serde_json::Value {
    serde_json::json!({
        "table": t.name,
        "description": t.meaning,
        "order": t.order,
        "columns": t.columns.iter().map(|c| serde_json::json!({
            "name": c.name,
            "type": c.ty.as_str(),
            "optional": c.nullable,
            "description": c.meaning,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_named_once_per_table() {
        for t in TABLES {
            let names: std::collections::BTreeSet<&str> = t.columns.iter().map(|c| c.name).collect();
            assert_eq!(names.len(), t.columns.len(), "{}", t.name);
            assert_eq!(schema_json(t)["columns"].as_array().unwrap().len(), t.columns.len());
        }
        assert_eq!(table("votes"), Some(&VOTES));
        // Every column of every table says what it is (that every table has its reader is
        // `exports`' own test: the contract imports nothing of the crate).
        for t in TABLES {
            assert_eq!(t.columns.first().map(|c| c.name), Some("dao_id"), "{}", t.name);
            assert!(t.columns.iter().all(|c| !c.meaning.is_empty()), "{}", t.name);
        }
        assert_eq!(ExportFormat::parse("parquet"), Ok(ExportFormat::Parquet));
        let file = ExportFile::parse("votes.parquet").unwrap();
        assert_eq!((file.table, file.format, file.name()), (&VOTES, ExportFormat::Parquet, "votes.parquet".to_owned()));
        assert_eq!(ExportFile::parse("votes.xlsx"), None);
        assert_eq!(ExportFile::parse("ballots.csv"), None);
        assert_eq!(ExportFile::all().count(), TABLES.len() * ExportFormat::ALL.len());
        assert!(ExportFile::pattern().starts_with("^(votes"));
        let codec = crate::contract::cursor::CursorCodec::new(b"secret");
        let g = grant(&codec, "/v2/exports/uniswap/votes.parquet", 2_000);
        assert!(grant_opens(&codec, "/v2/exports/uniswap/votes.parquet", &g, 1_999));
        assert!(!grant_opens(&codec, "/v2/exports/uniswap/votes.parquet", &g, 2_000), "expired");
        assert!(!grant_opens(&codec, "/v2/exports/uniswap/votes.csv", &g, 1_000), "another file");
        assert!(!grant_opens(&codec, "/v2/exports/uniswap/votes.parquet", &g.replace("2000.", "9000."), 1_000));
        assert!(!grant_opens(
            &crate::contract::cursor::CursorCodec::new(b"other"),
            "/v2/exports/uniswap/votes.parquet",
            &g,
            1
        ));
    }
}
