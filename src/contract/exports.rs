//! Whole-table exports (issue 30), declared once: the formats, and each exported table with its
//! columns, their types and meanings. The writers (`exports`), the schema document and the
//! files' own metadata all read these declarations.
//!
//! Types are chosen so that exact values survive every reader: voting power is the exact decimal
//! text received (with the float-origin flag kept beside it), a wei integer is also a
//! `DECIMAL(76,0)` where the format has one, timestamps are UTC with milliseconds, and ids are the
//! public ids the API serves.
use super::vocabulary::vocabulary;

vocabulary! {
    /// A file format of the exports.
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
    /// An unsigned integer of up to 76 digits in a token's smallest unit: Parquet
    /// `DECIMAL(76,0)`; text formats its decimal digits.
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
            Self::Wei => "decimal(76,0)",
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

/// Every exported table.
pub const TABLES: &[ExportTable] = &[VOTES];

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
            "nullable": c.nullable,
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
        assert_eq!(ExportFormat::parse("parquet"), Ok(ExportFormat::Parquet));
    }
}
