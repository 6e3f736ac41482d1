//! The proposal URL forms govdata recognises: what `GET /v1/proposals/lookup?url=` accepts, and
//! how ingestion links forum topics to the proposals their posts cite.

/// Where a person or agent can open a Snapshot space (the form `parse_url` reads back).
pub fn snapshot_space_url(space: &str) -> String {
    format!("https://snapshot.box/#/s:{space}")
}

/// Where a person or agent can open a Snapshot proposal (the form `parse_url` reads back).
pub fn snapshot_proposal_url(space: &str, proposal_id: &str) -> String {
    format!("https://snapshot.box/#/s:{space}/proposal/{proposal_id}")
}

/// A recognised URL form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposalUrl {
    /// `snapshot.org/#/<space>/proposal/<id>` or `snapshot.box/#/s:<space>/proposal/<id>`.
    Snapshot { space: String, id: String },
    /// `tally.xyz/gov/<org>/proposal/<id>`.
    Tally { org: String, id: String },
    /// A Discourse topic: `<forum>/t/<slug>/<id>` (or `/t/<id>`, optionally `/<post>`).
    Discourse { host: String, topic_id: String },
}

/// The lowercase host of `url` (scheme optional, `www.` and port dropped) and the rest.
pub fn split_host(url: &str) -> (String, &str) {
    let t = url.trim();
    let rest = ["https://", "http://"]
        .iter()
        .find_map(|s| t.get(..s.len()).filter(|p| p.eq_ignore_ascii_case(s)).map(|_| &t[s.len()..]))
        .unwrap_or(t);
    let end = rest.find(['/', '#', '?']).unwrap_or(rest.len());
    let host = rest[..end].to_ascii_lowercase();
    let host = host.split(':').next().unwrap_or_default();
    (host.strip_prefix("www.").unwrap_or(host).to_owned(), &rest[end..])
}

fn segments(path: &str) -> Vec<&str> {
    path.split(['?', '#']).next().unwrap_or_default().split('/').filter(|s| !s.is_empty()).collect()
}

/// Recognises the URL forms of [`ProposalUrl`].
pub fn parse_url(url: &str) -> Option<ProposalUrl> {
    let (host, rest) = split_host(url);
    if host.is_empty() {
        return None;
    }
    match host.as_str() {
        "snapshot.org" | "snapshot.box" => {
            let fragment = rest.split_once('#')?.1;
            let parts: Vec<&str> = fragment.split('?').next()?.split('/').filter(|s| !s.is_empty()).collect();
            match parts.as_slice() {
                [space, "proposal", id, ..] => {
                    let space = space.strip_prefix("s:").unwrap_or(space);
                    (!space.is_empty()).then(|| ProposalUrl::Snapshot { space: space.to_owned(), id: (*id).to_owned() })
                }
                _ => None,
            }
        }
        "tally.xyz" => match segments(rest).as_slice() {
            ["gov", org, "proposal", id, ..] => Some(ProposalUrl::Tally { org: org.to_string(), id: id.to_string() }),
            _ => None,
        },
        _ => {
            let parts = segments(rest);
            let t = parts.iter().position(|s| *s == "t")?;
            let numeric = |s: &&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            let id = match &parts[t + 1..] {
                [id, ..] if numeric(id) => id,
                [_slug, id, ..] if numeric(id) => id,
                _ => return None,
            };
            Some(ProposalUrl::Discourse { host, topic_id: id.to_string() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_urls_written_are_read_back() {
        let id = "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde";
        let url = snapshot_proposal_url("uniswapgovernance.eth", id);
        assert_eq!(
            parse_url(&url),
            Some(ProposalUrl::Snapshot { space: "uniswapgovernance.eth".into(), id: id.into() })
        );
        assert_eq!(parse_url(&snapshot_space_url("uniswapgovernance.eth")), None, "a space is not a proposal");
        assert_eq!(
            split_host(&snapshot_space_url("lido-snapshot.eth")),
            ("snapshot.box".into(), "/#/s:lido-snapshot.eth")
        );
    }

    #[test]
    fn split_host_lowercases_and_drops_the_scheme_www_and_port() {
        assert_eq!(split_host("HTTPS://WWW.Forum.Example:8443/t/1?x#y"), ("forum.example".into(), "/t/1?x#y"));
        assert_eq!(split_host("  forum.example#frag "), ("forum.example".into(), "#frag"));
        assert_eq!(split_host("http://host"), ("host".into(), ""));
        assert_eq!(split_host(""), (String::new(), ""));
    }

    #[test]
    fn recognises_every_url_form() {
        let id = "0x48e56786fd4ab27c5b089b45be1e914d4a3a0f9d067ac51eff0b26a882e49bde";
        let snap = ProposalUrl::Snapshot { space: "uniswapgovernance.eth".into(), id: id.into() };
        assert_eq!(
            parse_url(&format!("https://snapshot.org/#/uniswapgovernance.eth/proposal/{id}")),
            Some(snap.clone())
        );
        assert_eq!(
            parse_url(&format!("https://snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}")),
            Some(snap.clone())
        );
        assert_eq!(parse_url(&format!("snapshot.box/#/s:uniswapgovernance.eth/proposal/{id}?tab=votes")), Some(snap));
        assert_eq!(
            parse_url("https://www.tally.xyz/gov/uniswap/proposal/77?govId=eip155:1:0x408E"),
            Some(ProposalUrl::Tally { org: "uniswap".into(), id: "77".into() })
        );
        let topic = ProposalUrl::Discourse { host: "forum.example".into(), topic_id: "1234".into() };
        assert_eq!(parse_url("https://forum.example/t/some-slug/1234"), Some(topic.clone()));
        assert_eq!(parse_url("https://forum.example/t/some-slug/1234/7?u=x"), Some(topic.clone()));
        assert_eq!(parse_url("HTTPS://Forum.Example:443/t/1234"), Some(topic));
        for bad in
            ["", "https://snapshot.org/#/space", "https://example.com/x/1", "https://forum.example/t/slug", "nope"]
        {
            assert_eq!(parse_url(bad), None, "{bad:?}");
        }
    }
}
