//! The registry's DAOs and their sources, as the `daos` and `data_sources` tables hold them.
use std::collections::BTreeSet;

use sea_orm::{DbErr, EntityTrait};

use super::Applier;
use crate::contract::vocabulary::SourceKind;
use crate::store::entities::{dao, data_source};
use crate::store::upsert::{Changes, TableCounts, by_key, kept, upsert};

/// The registry as the `daos` and `data_sources` tables hold it.
#[derive(Debug, Clone)]
pub struct RegistrySync {
    pub daos: Vec<RegistryDao>,
}

#[derive(Debug, Clone)]
pub struct RegistryDao {
    pub id: String,
    pub name: String,
    pub symbol: Option<String>,
    pub snapshot_space: Option<String>,
    pub discourse_url: Option<String>,
    pub chain_id: Option<i64>,
    pub governor: Option<String>,
    pub token: Option<String>,
    /// (kind, locator, url) per configured source.
    pub sources: Vec<(SourceKind, String, Option<String>)>,
}

impl Applier<'_> {
    /// Registers every DAO of the registry and its sources. A DAO or source that left the
    /// registry is kept: what was ingested for it stays served.
    pub(super) async fn registry(&self, registry: &RegistrySync) -> Result<(TableCounts, BTreeSet<String>), DbErr> {
        let stored = by_key(dao::Entity::find().all(self.txn).await?, |m| m.id.clone());
        let mut daos = Changes::default();
        for r in &registry.daos {
            let old = stored.get(&r.id);
            let desired = dao::Model {
                id: r.id.clone(),
                name: r.name.clone(),
                symbol: r.symbol.clone().or_else(|| kept!(old, symbol)),
                snapshot_space: r.snapshot_space.clone().or_else(|| kept!(old, snapshot_space)),
                discourse_url: r.discourse_url.clone().or_else(|| kept!(old, discourse_url)),
                chain_id: r.chain_id.or_else(|| old.and_then(|s| s.chain_id)),
                governor: r.governor.clone().or_else(|| kept!(old, governor)),
                token: r.token.clone().or_else(|| kept!(old, token)),
                registered_ms: old.map_or(self.now_ms, |s| s.registered_ms),
            };
            daos.offer(old, desired, |_| {});
        }
        let mut touched: BTreeSet<String> = daos.rows.iter().map(|d| d.id.clone()).collect();
        upsert::<dao::Entity>(self.txn, daos.rows, &[dao::Column::Id], None).await?;

        let stored = by_key(data_source::Entity::find().all(self.txn).await?, |m| (m.dao_id.clone(), m.kind));
        let mut sources = Changes::default();
        for r in &registry.daos {
            for (kind, locator, url) in &r.sources {
                let old = stored.get(&(r.id.clone(), *kind));
                let desired = data_source::Model {
                    id: old.map_or(0, |s| s.id),
                    dao_id: r.id.clone(),
                    kind: *kind,
                    locator: locator.clone(),
                    url: url.clone(),
                };
                sources.offer(old, desired, |_| {});
            }
        }
        touched.extend(sources.rows.iter().map(|s| s.dao_id.clone()));
        let natural = [data_source::Column::DaoId, data_source::Column::Kind];
        upsert::<data_source::Entity>(self.txn, sources.rows, &natural, Some(data_source::Column::Id)).await?;
        let counts = TableCounts {
            inserted: daos.counts.inserted + sources.counts.inserted,
            updated: daos.counts.updated + sources.counts.updated,
        };
        Ok((counts, touched))
    }
}
