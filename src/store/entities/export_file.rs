//! The export catalogue (issue 30): one row per (DAO, table, format) file, saying which revision
//! of the DAO it holds, where it lies under `GOVDATA_EXPORT_DIR`, and what it holds. The row is
//! also the build claim: one process at a time holds it in state `building` (see
//! `store::exports`), so several processes never build the same file twice at once.
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "export_files")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub dao_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub table_name: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub format: String,
    /// Claimed by `builder` at `claimed_ms`, or ready to serve.
    pub state: ExportState,
    pub builder: Option<String>,
    pub claimed_ms: i64,
    /// The DAO revision the file was built from (`dao_summaries.revision_id`); 0 while none is.
    pub revision_id: i64,
    /// The revision whose publication last changed these bytes: an unchanged table rebuilt for
    /// a later revision keeps its bytes, sha256, ETag and this revision.
    pub changed_revision_id: i64,
    /// The DAO's `dataAsOf` at `revision_id`.
    pub data_as_of_ms: Option<i64>,
    /// The file's name in the DAO's directory (`<table>-<sha256 prefix>.<format>`).
    pub file_name: Option<String>,
    pub rows: i64,
    pub bytes: i64,
    /// Lowercase hex of the file's SHA-256.
    pub sha256: Option<String>,
    /// The size of the gzip-encoded copy kept beside a text file (`<file_name>.gz`).
    pub gzip_bytes: Option<i64>,
    pub built_ms: i64,
    /// The last time the file was served: the disk budget removes the least recently served
    /// files first.
    pub requested_ms: i64,
}

/// Where a file's build stands, stored as the text the column has always held (`building`,
/// `ready`): a string column, so no migration. Text this build does not know fails the row's
/// read, as an unknown vocabulary value does (`store::stored`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, EnumIter, DeriveActiveEnum)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
pub enum ExportState {
    /// Claimed by a builder, whose heartbeat moves `claimed_ms`.
    #[sea_orm(string_value = "building")]
    Building,
    /// Built and published: the file holds `revision_id`.
    #[sea_orm(string_value = "ready")]
    Ready,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

#[cfg(test)]
mod tests {
    use sea_orm::ActiveEnum;

    use super::ExportState;

    #[test]
    fn a_state_is_stored_as_the_text_the_column_has_always_held() {
        assert_eq!(ExportState::Building.to_value(), "building");
        assert_eq!(ExportState::Ready.to_value(), "ready");
        assert!(ExportState::try_from_value(&"built".to_owned()).is_err(), "unknown text fails the read");
    }
}
