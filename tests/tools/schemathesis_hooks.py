"""Schemathesis hooks for govdata (loaded through SCHEMATHESIS_HOOKS by .ci/contract-tools).

Two corrections, each explained where it is made; no check is excluded.

1. The `ignored_auth` check (ST401) counts only 401 and 403 as a
server refusing a request without valid credentials (schemathesis 4.32.5,
specs/openapi/checks.py `_enforces_auth`, AUTH_REJECTION_STATUSES = {401, 403}). govdata's paid
operations declare three alternative security schemes (partner token, x402 v2 payment, x402 v1
payment) and, as their documents say and as the x402 protocol requires, answer a request without
credentials with `402 Payment Required` carrying the payment challenge in the `PAYMENT-REQUIRED`
header (documented as the 402 response of every paid operation). That is a refusal: no data is
served. Reading it as "authentication not enforced" is the check being wrong about this API,
not the API being wrong.

So a 402 that carries an x402 challenge (`PAYMENT-REQUIRED` header) counts as enforcement. Any
other 402, and any 2xx to a request without credentials or with invalid ones, still fails ST401.

2. `positive_data_acceptance` (ST202) learns the contract rules an OpenAPI 3.0 schema cannot
state; each excuse is verified against the request (see the second half of this file). With this, the check also gets as far as its invalid-credentials
probes (it stopped at the first 402 before), which it never did without it.
"""

import schemathesis.specs.openapi.checks as _checks

_original_enforces_auth = _checks._enforces_auth


def _enforces_auth(response, authenticated):
    if response.status_code == 402 and response.headers.get("payment-required"):
        return True
    return _original_enforces_auth(response, authenticated)


_checks._enforces_auth = _enforces_auth


# ---------------------------------------------------------------------------------------------
# positive_data_acceptance (ST202) and the contract rules OpenAPI 3.0 cannot state.
#
# The check sends data that fits the published schemas and expects no 400. A few rules of the
# contract (../shared/CONTRACT.md) relate several parameters or the server's own history, which a
# 3.0 schema cannot express, so schema-valid requests break them and are rightly refused:
#   - v2 `cursor`: only cursors this server issued are accepted (INVALID_CURSOR); a generated one
#     never is, and the schema already states its shape (pattern, length).
#   - v2 windows: `to` not before `from`, and at most 90 / 365 days between them; a feed's `since`
#     at most 90 days before the newest data the server holds (its own state).
#   - v1 lookup: exactly one of `url`, `externalId`, `title`, each meaningful.
#   - v1's DAO slug in a path (brief), which v1's released document states only in prose: a
#     pattern now would be a breaking change by the guard in codegen. (A proposal `source` and an
#     item `kind` were the same until v1 stated their enums; their refusals are excused no more.)
#   - v2 webhook bodies: a `url` must be an http(s) URL with a host and no credentials or fragment
#     (`format: uri` admits any scheme); a `daoIds` member must name a DAO the server covers (its
#     own state, checked here against GET /v1/daos; a DAO id's form is stated only in prose, as
#     v1's); a `proposalKeys` member must be a proposal's key and a `voters` member given as an
#     ENS name must be a known voter's (the server's state, checked here by asking the server for
#     that proposal or voter: a 404); and a token holds at most so many webhooks
#     (the server's state: the detail says so).
# A 400 is excused only when its problem body names exactly such a rule AND the request really
# breaks it (checked here from the request); any other 400 to valid data still fails.

import datetime as _dt
import re as _re

_original_positive = _checks._openapi_positive_data_acceptance

_WINDOW = _re.compile(r"makes a window longer than (\d+) days")
_SLUG = _re.compile(r"^[a-z0-9_-]{1,64}$")
_SINCE = _re.compile(r"is more than (\d+) days before the newest data")


def _instant(text):
    try:
        return _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def _breaks_a_rule_schemas_cannot_state(case, body, response):
    if not isinstance(body, dict):
        return False
    code = body.get("code")
    errors = body.get("errors") or []
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    name, reason = first.get("name"), str(first.get("reason", ""))
    query = case.query or {}
    path = case.path_parameters or {}
    if code == "INVALID_CURSOR":
        return name == "cursor" and "cursor" in query
    if code != "VALIDATION_ERROR":
        return False
    if name == "to" and "from" in query and "to" in query:
        start, end = _instant(query["from"]), _instant(query["to"])
        if start is None or end is None:
            return False
        if reason == "is before `from`":
            return end < start
        window = _WINDOW.fullmatch(reason)
        return bool(window) and end - start > _dt.timedelta(days=int(window.group(1)))
    if name == "since" and "since" in query:
        # The floor moves with the data: the problem body names it, the request must be before it.
        floor, since = _instant(str(first.get("expected", "")).removeprefix("at or after ")), _instant(query["since"])
        return bool(_SINCE.fullmatch(reason)) and floor is not None and since is not None and since < floor
    if case.path == "/v1/proposals/lookup":
        given = [k for k in ("url", "externalId", "title") if k in query]
        if reason.startswith(("exactly one of", "only one of")):
            return len(given) != 1
        value = query.get(name)
        if reason == "must not be empty":
            return name == "externalId" and str(value).strip() == ""
        if reason == "contains no words (letters or digits)":
            return name == "title" and not any(c.isalnum() for c in str(value))
        if reason == "not a recognised Snapshot, Tally or Discourse topic URL":
            return name == "url" and not _re.match(r"^https?://[^/]+/", str(value))
        return False
    if reason == "is not a DAO slug":
        return name == "daoId" and not _SLUG.match(str(path.get("daoId", "")))
    sent = case.body if isinstance(case.body, dict) else {}
    if not first and "the most it may" in str(body.get("detail", "")):
        return case.path == "/v2/webhooks" and case.method.upper() == "POST"
    if first.get("in") == "body" and name == "url" and "url" in sent:
        return not _HTTP_URL.match(str(sent["url"]))
    daos = _DAO_MEMBER.fullmatch(str(name))
    if first.get("in") == "body" and daos:
        listed = sent.get("daoIds") or []
        at = int(daos.group(1))
        if at >= len(listed):
            return False
        if reason == "is not a DAO id":
            return not _SLUG.match(str(listed[at]))
        return reason == "is no covered DAO" and listed[at] not in _covered_daos(response)
    known = _KNOWN_MEMBER.fullmatch(str(name))
    if first.get("in") == "body" and known:
        member, at = known.group(1), int(known.group(2))
        listed = sent.get(member) or []
        if at >= len(listed) or not isinstance(listed[at], str):
            return False
        if member == "proposalKeys" and reason == "is no proposal's key":
            return _absent(response, "/v2/proposals/" + listed[at].strip())
        if member == "voters" and reason == "is an ENS name no known voter has":
            return _absent(response, "/v2/voters/" + listed[at].strip().lower())
    return False


# An http(s) URL with a host, no user information and no fragment: what a webhook may name.
_HTTP_URL = _re.compile(r"^https?://[^/?#@\s]+(?:[/?][^#\s]*)?$", _re.IGNORECASE)
_DAO_MEMBER = _re.compile(r"daoIds\[(\d+)\]")
_COVERED = None
_KNOWN_MEMBER = _re.compile(r"(proposalKeys|voters)\[(\d+)\]")


def _absent(response, path):
    # Whether the server answers 404 for `path`, asked with the refused request's credentials.
    import urllib.error as _error
    import urllib.parse as _parse
    import urllib.request as _request

    sent = _parse.urlsplit(response.request.url)
    headers = {k: v for k, v in response.request.headers.items() if k.lower().startswith("x-")}
    probe = _request.Request(f"{sent.scheme}://{sent.netloc}{_parse.quote(path)}", headers=headers)
    try:
        with _request.urlopen(probe, timeout=10):
            return False
    except _error.HTTPError as e:
        return e.code == 404


def _covered_daos(response):
    # The DAOs the server covers, read once from its free list (on 127.0.0.1, where the request went).
    global _COVERED
    if _COVERED is None:
        import json as _json
        import urllib.parse as _parse
        import urllib.request as _request

        sent = _parse.urlsplit(response.request.url)
        base = f"{sent.scheme}://{sent.netloc}"
        with _request.urlopen(f"{base}/v1/daos?limit=100", timeout=10) as answer:
            _COVERED = {d["daoId"] for d in _json.load(answer)["data"]}
    return _COVERED


def _positive_data_acceptance(ctx, response, case):
    if response.status_code == 400:
        try:
            body = response.json()
        except Exception:  # not JSON: not an excusable refusal
            body = None
        if _breaks_a_rule_schemas_cannot_state(case, body, response):
            return None
    return _original_positive(ctx, response, case)


_checks._openapi_positive_data_acceptance = _positive_data_acceptance
