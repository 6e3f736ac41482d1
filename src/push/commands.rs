//! The operator's `govdata webhooks`: every partner's subscriptions, managed from the command
//! line (what `/v2/webhooks` does for one token), and their delivery attempts.
use anyhow::Context;
use sea_orm::ActiveEnum;

use super::guard::{self, Reach};
use super::queue;
use crate::config::{WebhooksArgs, WebhooksCommand};
use crate::contract::{
    errors::ParamLocation,
    feed::FeedKind,
    ids::{self, IssuedKey, ProposalKey, VoterIdentity},
    time::{now_ms, rfc3339_ms},
    vocabulary::DaoId,
    webhooks::{MAX_PROPOSAL_KEYS, MAX_VOTERS, WebhookFormat, WebhookId},
};
use crate::store::{self, webhooks as subs};

/// `govdata webhooks`: the operator's view of every partner's subscriptions. Running servers
/// pick the changes up from the store: each delivery claimed after a change is sent as changed
/// (its format, URL and secrets, or not at all once disabled), and a subscription created or
/// enabled here is started within `GOVDATA_WEBHOOK_POLL`.
pub async fn webhooks(url: &str, args: WebhooksArgs) -> anyhow::Result<()> {
    let db = store::connect(url).await?;
    let reach = Reach { allow_private: args.webhook_allow_private };
    let find = |id: String| {
        let db = db.clone();
        async move {
            let found = match WebhookId::parse(&id) {
                Some(webhook) => subs::get(&db, None, &webhook).await?,
                None => None,
            };
            found.with_context(|| format!("no webhook `{id}`"))
        }
    };
    match args.command {
        WebhooksCommand::List { token } => {
            println!(
                "{:<24} {:>5}  {:<9} {:<17} {:<12} {:<30} url",
                "id", "token", "status", "format", "through", "filters"
            );
            for shown in subs::shown(&db, subs::list(&db, token).await?).await? {
                let s = &shown.subscription;
                let status = if s.enabled { "enabled" } else { "disabled" };
                let filters = shown.filters.describe();
                // The stored text: a format of a newer build is shown as it is.
                println!(
                    "{:<24} {:>5}  {status:<9} {:<17} {:<12} {filters:<30} {}",
                    s.public_id, s.token_id, s.format, shown.enqueued_through, s.url
                );
                if let Some(reason) = &s.disabled_reason {
                    println!("{:<24} disabled: {reason}", "");
                }
            }
        }
        WebhooksCommand::Create { token, url, dao, kinds, proposals, voters, description, format } => {
            let format = format
                .map(|f| {
                    WebhookFormat::parse(&f)
                        .map_err(|_| anyhow::anyhow!("unknown format `{f}`; formats are {}", WebhookFormat::choices()))
                })
                .transpose()?;
            let parsed = guard::check_url_text(reach, &url).map_err(|e| anyhow::anyhow!("the URL {e}"))?;
            guard::check_url(reach, &*guard::resolver(None), &parsed)
                .await
                .map_err(|e| anyhow::anyhow!("the URL {e}"))?;
            // Each id read once; one that is no DAO id names no covered DAO either.
            let read: Vec<(&str, Option<DaoId>)> = dao.iter().map(|d| (d.as_str(), DaoId::parse(d))).collect();
            let daos: Vec<DaoId> = read.iter().filter_map(|(_, id)| id.clone()).collect();
            let uncovered = subs::unknown_daos(&db, &daos).await?;
            let unknown: Vec<&str> = read
                .iter()
                .filter(|(_, id)| id.as_ref().is_none_or(|id| uncovered.contains(id)))
                .map(|(text, _)| *text)
                .collect();
            anyhow::ensure!(unknown.is_empty(), "no covered DAO has the id {}", unknown.join(", "));
            let kinds = kinds
                .iter()
                .map(|k| {
                    FeedKind::parse(k)
                        .map_err(|_| anyhow::anyhow!("unknown kind `{k}`; kinds are {}", FeedKind::choices()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let proposals = checked_proposals(&db, &proposals).await?;
            let voters = checked_voters(&db, &voters).await?;
            anyhow::ensure!(
                store::tokens::list(&db).await?.iter().any(|t| t.id == token && t.revoked_ms.is_none()),
                "no live partner token {token}"
            );
            let filters = subs::Filters::new(daos, kinds).with_proposals(proposals).with_voters(voters);
            let target = subs::Target { url: parsed.to_string(), filters, description, format };
            let s = match subs::create(&db, token, &target, now_ms()).await {
                Ok(s) => s,
                Err(subs::CreateError::TooMany) => anyhow::bail!("token {token} holds the most webhooks it may"),
                Err(subs::CreateError::Store(e)) => return Err(e.into()),
            };
            eprintln!(
                "created webhook {} ({}) for token {token}; its secret is shown once (it signs only \
                 standard_webhooks messages):",
                s.public_id, s.format
            );
            println!("{}", s.secret);
        }
        WebhooksCommand::Disable { id } => {
            let change = subs::Change { enabled: Some(false), ..Default::default() };
            let s = subs::update(&db, find(id).await?, &change, now_ms()).await?;
            println!("webhook {} disabled", s.public_id);
        }
        WebhooksCommand::Enable { id } => {
            let change = subs::Change { enabled: Some(true), ..Default::default() };
            let s = subs::update(&db, find(id).await?, &change, now_ms()).await?;
            println!("webhook {} enabled", s.public_id);
        }
        WebhooksCommand::Delete { id } => {
            let s = find(id).await?;
            subs::delete(&db, &s).await?;
            println!("webhook {} deleted", s.public_id);
        }
        WebhooksCommand::RotateSecret { id } => {
            let s = subs::rotate(&db, find(id).await?, now_ms()).await?;
            eprintln!("webhook {}: new secret, shown once (the previous one signs beside it for a day):", s.public_id);
            println!("{}", s.secret);
        }
        WebhooksCommand::Test { id } => {
            let s = find(id).await?;
            let note = "A test message from govdata (queued by an operator).";
            let msg_id = queue::queue_test(&db, &s, note, now_ms()).await?;
            println!("queued {msg_id}");
        }
        WebhooksCommand::Replay { id, after } => {
            if let Some(pruned) = store::feed::pruned_past(&db, after).await? {
                anyhow::bail!("entries up to {pruned} were pruned; replay after {pruned} or later");
            }
            let (from, through) = queue::replay(&db, find(id).await?, after, now_ms()).await?;
            println!("entries after {from} up to {through} are queued again");
        }
        WebhooksCommand::Deliveries { id, limit } => {
            let s = find(id).await?;
            println!(
                "{:<25} {:>7} {:<10} {:>6} {:>8}  {:<25} error",
                "attempted", "attempt", "outcome", "status", "ms", "next"
            );
            for a in queue::attempts(&db, s.id, None, limit).await? {
                let status = a.status_code.map_or("-".to_owned(), |c| c.to_string());
                let next = a.next_attempt_ms.map_or("-".to_owned(), rfc3339_ms);
                println!(
                    "{:<25} {:>7} {:<10} {status:>6} {:>8}  {next:<25} {}",
                    rfc3339_ms(a.attempted_ms),
                    a.attempt,
                    a.outcome.to_value(),
                    a.duration_ms,
                    a.error.unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

/// The proposal keys an operator named, each a stored proposal's (at most as many as the API takes).
async fn checked_proposals(db: &sea_orm::DatabaseConnection, keys: &[String]) -> anyhow::Result<Vec<ProposalKey>> {
    anyhow::ensure!(keys.len() <= MAX_PROPOSAL_KEYS, "at most {MAX_PROPOSAL_KEYS} proposals");
    let keys = keys
        .iter()
        .map(|k| ProposalKey::parse(k).map_err(|_| anyhow::anyhow!("`{k}` is not a proposal key (`p_…`)")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let unknown = subs::unknown_proposals(db, &keys).await?;
    anyhow::ensure!(
        unknown.is_empty(),
        "no stored proposal has the key {}",
        unknown.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
    );
    Ok(keys)
}

/// The voters an operator named, as lowercase addresses (ENS names resolved from the store).
async fn checked_voters(db: &sea_orm::DatabaseConnection, voters: &[String]) -> anyhow::Result<Vec<String>> {
    anyhow::ensure!(voters.len() <= MAX_VOTERS, "at most {MAX_VOTERS} voters");
    let mut out = Vec::with_capacity(voters.len());
    for text in voters {
        let identity = ids::parse_voter_identity(text, "voters", ParamLocation::Query)
            .map_err(|p| anyhow::anyhow!("voter `{text}`: {}", p.detail))?;
        let address = match identity {
            VoterIdentity::Address(a) => a,
            VoterIdentity::Ens(name) => store::voters::address_of_ens(db, &name)
                .await?
                .with_context(|| format!("no known voter has the ENS name `{name}`"))?,
        };
        out.push(address);
    }
    Ok(out)
}
