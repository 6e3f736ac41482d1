//! The bundled sample dataset's files: the importer reads them by these names, and citations of
//! rows imported from them name the file (`dataset: data/sample/snapshot_votes.csv`).
pub const PROPOSALS_FILE: &str = "snapshot_proposals.csv";
pub const VOTES_FILE: &str = "snapshot_votes.csv";
pub const DELEGATES_FILE: &str = "tally_delegates.csv";

/// The dataset path a citation gives for one of the files.
pub fn cited_path(file: &str) -> String {
    format!("data/sample/{file}")
}
