"""A Python consumer of govdata, through the clients openapi-python-client generates.

.ci/contract-tools generates `govdata_v1` (from openapi/v1.json) and `govdata_v2` (from
openapi/v2.json) into a scratch directory and runs:

    python consumer.py GENERATED_DIR BASE_URL TOKEN

Each check calls the live server through the generated client, the way an agent would, and
asserts that the response parsed into the documented model (`Response.parsed` is the model type,
not None) and that the values make sense. Every check runs; the exit code is 1 if any failed.
"""

from __future__ import annotations

import sys
import traceback
from decimal import Decimal

GENERATED, BASE_URL, TOKEN = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, GENERATED)

import govdata_v1 as v1  # noqa: E402
import govdata_v2 as v2  # noqa: E402
from govdata_v1.api.daos import brief_get as v1_brief_get  # noqa: E402
from govdata_v1.api.daos import daos_list as v1_daos_list  # noqa: E402
from govdata_v1.api.pricing import pricing_get as v1_pricing_get  # noqa: E402
from govdata_v2.api.daos import v2_daos_get  # noqa: E402
from govdata_v2.api.proposals import v2_proposal_votes_list as v2_votes_list  # noqa: E402
from govdata_v2.api.proposals import v2_proposals_get  # noqa: E402
from govdata_v2.api.proposals import v2_proposals_list  # noqa: E402

TOKEN_HEADER = "x-service-api-token"
failures: list[str] = []
passed = 0


def model(module_name: str, class_name: str):
    """A generated model class, looked up by name so that a missing model is a check failure
    (openapi-python-client drops models it cannot process) rather than an import error."""
    pkg, _, mod = module_name.partition(".")
    try:
        module = __import__(f"{pkg}.models.{mod}", fromlist=[class_name])
        return getattr(module, class_name)
    except (ImportError, AttributeError) as exc:
        raise AssertionError(f"generated client has no model {module_name}.{class_name} ({exc})") from None


def expect_parsed(response, module_name: str, class_name: str, status: int):
    cls = model(module_name, class_name)
    assert response.status_code == status, f"HTTP {int(response.status_code)}, expected {status}: {response.content[:300]!r}"
    assert response.parsed is not None, (
        f"HTTP {int(response.status_code)} but `parsed` is None: the generated client has no model for this response"
    )
    assert isinstance(response.parsed, cls), f"parsed is {type(response.parsed).__name__}, expected {class_name}"
    return response.parsed


def check(name: str):
    def wrap(fn):
        global passed
        try:
            fn()
        except (v1.errors.UnexpectedStatus, v2.errors.UnexpectedStatus) as exc:
            # The generated client raises this for a status it has no parser for: either the status
            # is undocumented, or the generator dropped the documented response's model.
            detail = (
                f"the generated client cannot parse HTTP {exc.status_code} (undocumented status, or its model was "
                f"dropped at generation): {exc.content[:200]!r}"
            )
            failures.append(f"{name}: {detail}")
            print(f"FAIL {name}: {detail}")
        except Exception as exc:  # noqa: BLE001 - every failure is reported, then the next check runs
            detail = str(exc) if isinstance(exc, AssertionError) else traceback.format_exc(limit=3)
            failures.append(f"{name}: {detail}")
            print(f"FAIL {name}: {detail}")
        else:
            passed += 1
            print(f"ok   {name}")
        return fn

    return wrap


free1 = v1.Client(base_url=BASE_URL, raise_on_unexpected_status=True)
paid1 = v1.AuthenticatedClient(
    base_url=BASE_URL, token=TOKEN, prefix="", auth_header_name=TOKEN_HEADER, raise_on_unexpected_status=True
)
paid2 = v2.AuthenticatedClient(
    base_url=BASE_URL, token=TOKEN, prefix="", auth_header_name=TOKEN_HEADER, raise_on_unexpected_status=True
)
anon2 = v2.AuthenticatedClient(
    base_url=BASE_URL, token="", prefix="", auth_header_name="x-unused", raise_on_unexpected_status=True
)

state: dict[str, object] = {}


@check("v1 GET /v1/daos (free): V1Envelope_V1Page_Dao with legacy pagination")
def _():
    env = expect_parsed(v1_daos_list.sync_detailed(client=free1, limit=3), "govdata_v1.v1_envelope_v1_page_dao", "V1EnvelopeV1PageDao", 200)
    page = env.data
    assert page.limit == 3 and page.offset == 0, (page.limit, page.offset)
    assert 0 < len(page.items) <= 3 <= page.total, (len(page.items), page.total)
    ids = [d.dao_id for d in page.items]
    assert ids == sorted(ids), f"not ordered by daoId: {ids}"
    for dao in page.items:
        assert dao.name and dao.sources, dao
        if dao.counts:
            assert int(dao.counts.proposals) >= int(dao.counts.active_proposals) >= 0
            assert int(dao.counts.upstream_votes) >= 0 and int(dao.counts.ingested_votes) >= 0
    assert env.request.path == "/v1/daos" and env.request.adjustments == []
    assert env.freshness.generated_at


@check("v1 GET /v1/daos?limit=1000: the clamp is applied and recorded in request.adjustments")
def _():
    env = expect_parsed(v1_daos_list.sync_detailed(client=free1, limit=1000), "govdata_v1.v1_envelope_v1_page_dao", "V1EnvelopeV1PageDao", 200)
    assert env.data.limit == 100, env.data.limit
    adj = [a for a in env.request.adjustments if a.param == "limit"]
    assert adj and adj[0].reason.value == "clamped_to_max" and adj[0].received == "1000" and adj[0].applied == "100", adj


@check("v1 GET /v1/daos, all pages by offset: every DAO once, total consistent")
def _():
    seen: list[str] = []
    offset, total = 0, None
    for _ in range(50):
        env = expect_parsed(v1_daos_list.sync_detailed(client=free1, limit=2, offset=offset), "govdata_v1.v1_envelope_v1_page_dao", "V1EnvelopeV1PageDao", 200)
        total = env.data.total if total is None else total
        assert env.data.total == total
        seen += [d.dao_id for d in env.data.items]
        offset += env.data.limit
        if offset >= total:
            break
    assert len(seen) == total == len(set(seen)), (seen, total)
    assert "uniswap" in seen, seen
    state["daos"] = seen


@check("v1 GET /v1/meta/pricing (free): V1Envelope_Pricing")
def _():
    env = expect_parsed(v1_pricing_get.sync_detailed(client=free1), "govdata_v1.v1_envelope_pricing", "V1EnvelopePricing", 200)
    assert env.data is not None


@check("v1 GET /v1/daos/uniswap/brief (paid, partner token): V1Envelope_DaoBrief")
def _():
    env = expect_parsed(v1_brief_get.sync_detailed("uniswap", client=paid1), "govdata_v1.v1_envelope_dao_brief", "V1EnvelopeDaoBrief", 200)
    assert env.data.dao.dao_id == "uniswap", env.data.dao.dao_id


@check("v2 GET /v2/daos/uniswap (paid): V2Single_Dao")
def _():
    res = expect_parsed(v2_daos_get.sync_detailed("uniswap", client=paid2), "govdata_v2.v2_single_dao", "V2SingleDao", 200)
    dao = res.data
    assert dao.dao_id == "uniswap" and dao.name == "Uniswap", (dao.dao_id, dao.name)
    assert dao.status.value == "ingested", dao.status
    assert dao.counts and int(dao.counts.proposals) > 0, dao.counts
    assert int(dao.counts.upstream_votes) >= int(dao.counts.ingested_votes) > 0, dao.counts
    assert res.meta.freshness.cache_status.value in {"memory_cache", "fresh", "cached_live", "refreshed_live"}


@check("v2 GET /v2/daos/no-such-dao (paid): 404 Problem NOT_FOUND")
def _():
    p = expect_parsed(v2_daos_get.sync_detailed("no-such-dao", client=paid2), "govdata_v2.problem", "Problem", 404)
    assert p.code.value == "NOT_FOUND" and p.status == 404 and p.request_id, p


@check("v2 GET /v2/daos/uniswap without credentials: 402 Problem PAYMENT_REQUIRED")
def _():
    p = expect_parsed(v2_daos_get.sync_detailed("uniswap", client=anon2), "govdata_v2.problem", "Problem", 402)
    assert p.code.value == "PAYMENT_REQUIRED", p.code


@check("v2 GET /v2/proposals?daoId=uniswap pages 1 and 2 by cursor: V2List_ProposalSummary")
def _():
    first = expect_parsed(
        v2_proposals_list.sync_detailed(client=paid2, dao_id="uniswap", limit=5), "govdata_v2.v2_list_proposal_summary", "V2ListProposalSummary", 200
    )
    page = first.meta.page
    assert page.limit == 5 and len(first.data.items) == 5, (page.limit, len(first.data.items))
    assert page.has_more and isinstance(page.next_cursor, str) and page.next_cursor, page
    second = expect_parsed(
        v2_proposals_list.sync_detailed(client=paid2, dao_id="uniswap", limit=5, cursor=page.next_cursor),
        "govdata_v2.v2_list_proposal_summary",
        "V2ListProposalSummary",
        200,
    )
    keys1 = [p.proposal_key for p in first.data.items]
    keys2 = [p.proposal_key for p in second.data.items]
    assert keys2 and not set(keys1) & set(keys2), f"page 2 repeats page 1: {keys1} / {keys2}"
    created = [p.created_at for p in first.data.items + second.data.items]
    assert created == sorted(created, reverse=True), f"not newest first: {created}"
    for p in first.data.items + second.data.items:
        assert p.dao_id == "uniswap" and p.proposal_key.startswith("p_") and p.title, p
        assert int(p.votes.ingested) >= 0
        if p.scores_total is not None and not isinstance(p.scores_total, v2.types.Unset):
            Decimal(p.scores_total)
    state["proposal_key"] = keys1[0]


@check("v2 GET /v2/proposals with a forged cursor: 400 Problem INVALID_CURSOR")
def _():
    p = expect_parsed(v2_proposals_list.sync_detailed(client=paid2, dao_id="uniswap", cursor="forged"), "govdata_v2.problem", "Problem", 400)
    assert p.code.value == "INVALID_CURSOR", p.code


@check("v2 GET /v2/proposals/{proposalKey} from the list: V2Single_ProposalDetail")
def _():
    key = state.get("proposal_key")
    assert isinstance(key, str), "no proposal key (the list check failed)"
    res = expect_parsed(v2_proposals_get.sync_detailed(key, client=paid2), "govdata_v2.v2_single_proposal_detail", "V2SingleProposalDetail", 200)
    assert res.data.proposal_key == key and res.data.dao_id == "uniswap", res.data


@check("v2 GET /v2/proposals/{proposalKey}/votes: V2List_ProposalVote")
def _():
    key = state.get("proposal_key")
    assert isinstance(key, str), "no proposal key (the list check failed)"
    res = expect_parsed(v2_votes_list.sync_detailed(key, client=paid2, limit=10), "govdata_v2.v2_list_proposal_vote", "V2ListProposalVote", 200)
    for vote in res.data.items:
        assert vote.voter_identity == vote.voter_identity.lower() and Decimal(vote.voting_power) >= 0, vote


print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
