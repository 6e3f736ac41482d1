//! Stored vote facts per proposal, computed at publication from the proposal's votes, so that
//! evidence, briefs and the signal rules never read a proposal's votes per request.
//!
//! `proposal_facts` holds, per proposal with votes: the exact per-choice tally (JSON object
//! `{"1": ["123.45", 17], …}`: score and votes giving the choice a share), the counts behind it, and the two votes the signal rules weigh (the
//! largest, and the one with the largest effect on the margin) as JSON. Read by primary key only
//! (`store::facts::load`), so it needs no secondary index.
//!
//! Publication fills rows for proposals that have votes but no row yet, so a store migrated from
//! before this table gets its facts at its next publication (`store::publish`).
use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ProposalFacts {
    Table,
    ProposalId,
    VotingType,
    Votes,
    VotesCounted,
    VotesUnreadable,
    TotalPower,
    Scores,
    Largest,
    MostEffective,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ProposalFacts::Table)
                    .if_not_exists()
                    .col(ColumnDef::new(ProposalFacts::ProposalId).big_integer().not_null().primary_key())
                    .col(ColumnDef::new(ProposalFacts::VotingType).string().null())
                    .col(ColumnDef::new(ProposalFacts::Votes).big_integer().not_null())
                    .col(ColumnDef::new(ProposalFacts::VotesCounted).big_integer().not_null())
                    .col(ColumnDef::new(ProposalFacts::VotesUnreadable).big_integer().not_null())
                    .col(ColumnDef::new(ProposalFacts::TotalPower).text().not_null())
                    .col(ColumnDef::new(ProposalFacts::Scores).text().not_null())
                    .col(ColumnDef::new(ProposalFacts::Largest).text().null())
                    .col(ColumnDef::new(ProposalFacts::MostEffective).text().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_table(Table::drop().table(ProposalFacts::Table).to_owned()).await
    }
}
