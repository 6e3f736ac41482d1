//! Local stand-ins for the upstreams, on 127.0.0.1:0, answering in the upstreams' own formats:
//! a Snapshot hub that implements the GraphQL paging semantics the connector relies on (`first`
//! ≤ 1000, `skip` ≤ 5000, `created_gte`, `id_in`, `orderBy: created asc`), and a Discourse forum
//! (`/latest.json` pages, `/t/{id}.json` with 20 inline posts, `/t/{id}/posts.json?post_ids[]=`).
//! Faults (429 with `Retry-After`, 5xx, malformed JSON, a stall) can be queued for the next
//! requests. Every request is recorded with its arrival time.
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use poem::listener::{Acceptor, Listener, TcpListener};
use poem::{EndpointExt, Request, Response, Server};
use serde_json::{Value, json, value::RawValue};

/// One request as the stand-in saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Instant,
    pub path: String,
    pub query: String,
    pub body: Value,
}

/// What the next request gets instead of its answer.
#[derive(Debug, Clone)]
pub enum Fault {
    /// This status, with `Retry-After` when given.
    Status(u16, Option<&'static str>),
    /// 200 with a body that is not JSON.
    Malformed,
    /// Answers after this long.
    Stall(Duration),
}

type Handler = Arc<dyn Fn(&Seen) -> (u16, String) + Send + Sync>;

pub struct Fake {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    faults: Arc<Mutex<VecDeque<Fault>>>,
}

impl Fake {
    pub async fn start(handler: Handler) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let faults: Arc<Mutex<VecDeque<Fault>>> = Arc::new(Mutex::new(VecDeque::new()));
        let (s, f) = (seen.clone(), faults.clone());
        let endpoint = poem::endpoint::make(move |req: Request| {
            let (seen, faults, handler) = (s.clone(), f.clone(), handler.clone());
            async move {
                let path = req.uri().path().to_owned();
                let query = req.uri().query().unwrap_or_default().to_owned();
                let body: Value = req.into_body().into_json().await.unwrap_or(Value::Null);
                let request = Seen { at: Instant::now(), path, query, body };
                seen.lock().unwrap().push(request.clone());
                let fault = faults.lock().unwrap().pop_front();
                match fault {
                    Some(Fault::Status(status, retry_after)) => {
                        let mut r = Response::builder().status(poem::http::StatusCode::from_u16(status).unwrap());
                        if let Some(wait) = retry_after {
                            r = r.header("retry-after", wait);
                        }
                        return r.content_type("text/plain").body(format!("status {status}"));
                    }
                    Some(Fault::Malformed) => {
                        return Response::builder().content_type("application/json").body("{\"data\": [trunc");
                    }
                    Some(Fault::Stall(d)) => tokio::time::sleep(d).await,
                    None => {}
                }
                let (status, body) = handler(&request);
                Response::builder()
                    .status(poem::http::StatusCode::from_u16(status).unwrap())
                    .content_type("application/json")
                    .body(body)
            }
        });
        let acceptor = TcpListener::bind("127.0.0.1:0").into_acceptor().await.expect("bind");
        let addr = acceptor.local_addr()[0].as_socket_addr().copied().expect("socket address");
        tokio::spawn(Server::new_with_acceptor(acceptor).run(endpoint.map_to_response()));
        Self { url: format!("http://{addr}"), seen, faults }
    }

    pub fn fault(&self, fault: Fault) {
        self.faults.lock().unwrap().push_back(fault);
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

// ---------------------------------------------------------------------------------------------
// Snapshot hub

/// A proposal as the hub stores it; number fields hold the JSON text the hub would print.
#[derive(Debug, Clone)]
pub struct HubProposal {
    pub id: String,
    pub created: i64,
    pub state: &'static str,
    pub scores: Vec<&'static str>,
    pub scores_total: &'static str,
    pub scores_state: &'static str,
    pub title: String,
    pub votes: i64,
}

#[derive(Debug, Clone)]
pub struct HubVote {
    pub id: String,
    pub proposal: String,
    pub voter: String,
    pub created: i64,
    /// JSON text: `1`, `[1,3]`, `{"2":1}`.
    pub choice: String,
    /// JSON number text, printed as is.
    pub vp: String,
}

#[derive(Default)]
pub struct HubData {
    pub space: String,
    pub proposals: Vec<HubProposal>,
    pub votes: Vec<HubVote>,
}

pub const HUB_FIRST_MAX: usize = 1000;
pub const HUB_SKIP_MAX: usize = 5000;

/// A Snapshot hub over `data` at `{url}/graphql`.
pub async fn snapshot_hub(data: Arc<Mutex<HubData>>) -> Fake {
    Fake::start(Arc::new(move |req: &Seen| {
        if req.path != "/graphql" {
            return (404, "{}".to_owned());
        }
        let query = req.body["query"].as_str().unwrap_or_default();
        let vars = &req.body["variables"];
        let first = vars["first"].as_u64().unwrap_or(20) as usize;
        let skip = vars["skip"].as_u64().unwrap_or(0) as usize;
        if first > HUB_FIRST_MAX {
            return (
                200,
                json!({"errors": [{"message": "The `first` argument must not be greater than 1000"}]}).to_string(),
            );
        }
        if skip > HUB_SKIP_MAX {
            return (
                200,
                json!({"errors": [{"message": "The `skip` argument must not be greater than 5000"}]}).to_string(),
            );
        }
        let data = data.lock().unwrap();
        let created_gte = vars["created_gte"].as_i64().unwrap_or(0);
        if query.contains("proposals(") {
            let mut rows: Vec<&HubProposal> = match vars["ids"].as_array() {
                Some(ids) => {
                    let ids: Vec<&str> = ids.iter().filter_map(Value::as_str).collect();
                    data.proposals.iter().filter(|p| ids.contains(&p.id.as_str())).collect()
                }
                None => {
                    assert_eq!(vars["space"], data.space.as_str(), "the connector asks for its own space");
                    data.proposals.iter().filter(|p| p.created >= created_gte).collect()
                }
            };
            // A stable order: created, then id (the hub's tie order is its own; the connector must not care).
            rows.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
            let page: Vec<String> =
                rows.into_iter().skip(skip).take(first).map(|p| proposal_json(&data.space, p)).collect();
            (200, format!("{{\"data\":{{\"proposals\":[{}]}}}}", page.join(",")))
        } else if query.contains("votes(") {
            let proposal = vars["proposal"].as_str().unwrap_or_default();
            let mut rows: Vec<&HubVote> =
                data.votes.iter().filter(|v| v.proposal == proposal && v.created >= created_gte).collect();
            rows.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
            let page: Vec<String> = rows.into_iter().skip(skip).take(first).map(vote_json).collect();
            (200, format!("{{\"data\":{{\"votes\":[{}]}}}}", page.join(",")))
        } else {
            (200, json!({"errors": [{"message": "Cannot query this field"}]}).to_string())
        }
    }))
    .await
}

/// Serialises `fields`, then writes each raw member's JSON text as is. (`json!` would turn a
/// `RawValue` into a `Value` and its number into an f64: exactly the loss under test.)
fn with_raw(mut fields: Value, raw_members: &[(&str, String)]) -> String {
    for (name, _) in raw_members {
        fields[*name] = json!(format!("@@{name}@@"));
    }
    let mut text = fields.to_string();
    for (name, raw_text) in raw_members {
        let checked = RawValue::from_string(raw_text.clone()).expect("valid JSON text");
        text = text.replace(&format!("\"@@{name}@@\""), checked.get());
    }
    text
}

fn proposal_json(space: &str, p: &HubProposal) -> String {
    let fields = json!({
        "id": p.id,
        "ipfs": format!("bafkrei{}", &p.id[2..12]),
        "author": if p.title == "Unreadable author" { "satoshi" } else { "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
        "created": p.created,
        "updated": null,
        "space": {"id": space},
        "network": "1",
        "type": "single-choice",
        "title": p.title,
        "body": format!("Body of {}", p.title),
        "discussion": "",
        "choices": ["For", "Against", "Abstain"],
        "start": p.created + 60,
        "end": p.created + 3 * 86_400,
        "snapshot": 21_000_000,
        "state": p.state,
        "scores_state": p.scores_state,
        "votes": p.votes,
    });
    let raw = [
        ("scores", format!("[{}]", p.scores.join(","))),
        ("scores_total", p.scores_total.to_owned()),
        ("quorum", "0".to_owned()),
    ];
    with_raw(fields, &raw)
}

fn vote_json(v: &HubVote) -> String {
    let fields = json!({
        "id": v.id,
        "voter": v.voter,
        "created": v.created,
        "reason": "",
        "vp_state": "final",
        "ipfs": format!("bafkreivote{}", &v.id[2..8]),
    });
    with_raw(fields, &[("choice", v.choice.clone()), ("vp", v.vp.clone())])
}

// ---------------------------------------------------------------------------------------------
// Discourse

#[derive(Debug, Clone)]
pub struct ForumTopic {
    pub id: i64,
    pub title: String,
    pub slug: String,
    pub bumped_at: String,
    pub created_at: String,
    pub category_id: i64,
    /// (post id, post number, username, cooked HTML, created_at)
    pub posts: Vec<(i64, i64, String, String, String)>,
}

#[derive(Default)]
pub struct ForumData {
    pub topics: Vec<ForumTopic>,
    /// Topics per `/latest.json` page.
    pub per_page: usize,
}

/// A Discourse forum over `data`.
pub async fn discourse(data: Arc<Mutex<ForumData>>) -> Fake {
    Fake::start(Arc::new(move |req: &Seen| {
        let data = data.lock().unwrap();
        let params: HashMap<String, Vec<String>> = url_pairs(&req.query);
        if req.path == "/latest.json" {
            let page: usize = params.get("page").and_then(|p| p[0].parse().ok()).unwrap_or(0);
            let mut topics: Vec<&ForumTopic> = data.topics.iter().collect();
            topics.sort_by(|a, b| b.bumped_at.cmp(&a.bumped_at));
            let rows: Vec<Value> = topics
                .iter()
                .skip(page * data.per_page)
                .take(data.per_page)
                .map(|t| {
                    json!({
                        "id": t.id, "title": t.title, "fancy_title": t.title, "slug": t.slug,
                        "posts_count": t.posts.len(), "reply_count": t.posts.len() - 1, "highest_post_number": t.posts.len(),
                        "created_at": t.created_at, "last_posted_at": t.bumped_at, "bumped": true, "bumped_at": t.bumped_at,
                        "pinned": false, "unpinned": null, "visible": true, "closed": false, "archived": false,
                        "views": 120, "like_count": 7, "category_id": t.category_id, "tags": ["governance"],
                        "last_poster_username": t.posts.last().map(|p| p.2.clone()),
                    })
                })
                .collect();
            let more = (page + 1) * data.per_page < topics.len();
            let mut list = json!({"can_create_topic": false, "per_page": data.per_page, "topics": rows});
            if more {
                list["more_topics_url"] = json!(format!("/latest?page={}", page + 1));
            }
            return (200, json!({"users": [], "primary_groups": [], "topic_list": list}).to_string());
        }
        let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
        let post = |t: &ForumTopic, p: &(i64, i64, String, String, String)| {
            json!({
                "id": p.0, "name": p.2, "username": p.2, "avatar_template": "/a.png", "created_at": p.4,
                "cooked": p.3, "post_number": p.1, "post_type": 1, "updated_at": p.4, "reply_count": 0,
                "topic_id": t.id, "topic_slug": t.slug, "yours": false,
            })
        };
        match parts.as_slice() {
            ["t", id] if id.ends_with(".json") => {
                let id: i64 = id.trim_end_matches(".json").parse().unwrap_or(-1);
                let Some(t) = data.topics.iter().find(|t| t.id == id) else { return (404, "{}".to_owned()) };
                let inline: Vec<Value> = t.posts.iter().take(20).map(|p| post(t, p)).collect();
                let stream: Vec<i64> = t.posts.iter().map(|p| p.0).collect();
                let body = json!({
                    "post_stream": {"posts": inline, "stream": stream},
                    "timeline_lookup": [], "tags": ["governance"], "id": t.id, "title": t.title,
                    "fancy_title": t.title, "posts_count": t.posts.len(), "created_at": t.created_at,
                    "views": 120, "reply_count": t.posts.len() - 1, "like_count": 7,
                    "last_posted_at": t.bumped_at, "visible": true, "closed": false, "archived": false,
                    "archetype": "regular", "slug": t.slug, "category_id": t.category_id,
                    "word_count": 1000, "participant_count": 3,
                    "details": {"created_by": {"id": 1, "username": t.posts[0].2}},
                });
                (200, body.to_string())
            }
            ["t", id, "posts.json"] => {
                let id: i64 = id.parse().unwrap_or(-1);
                let Some(t) = data.topics.iter().find(|t| t.id == id) else { return (404, "{}".to_owned()) };
                let wanted: Vec<i64> =
                    params.get("post_ids[]").map(|v| v.iter().filter_map(|p| p.parse().ok()).collect()).unwrap_or_default();
                assert!(wanted.len() <= 20, "Discourse serves at most 20 posts by id per request");
                let posts: Vec<Value> = t.posts.iter().filter(|p| wanted.contains(&p.0)).map(|p| post(t, p)).collect();
                (200, json!({"post_stream": {"posts": posts}, "id": t.id}).to_string())
            }
            _ => (404, json!({"errors": ["The requested URL or resource could not be found."]}).to_string()),
        }
    }))
    .await
}

fn url_pairs(query: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default() {
        map.entry(k).or_default().push(v);
    }
    map
}
