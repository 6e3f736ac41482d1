"""Schemathesis hooks for govdata (loaded through SCHEMATHESIS_HOOKS by .ci/contract-tools).

One correction, and only one: the `ignored_auth` check (ST401) counts only 401 and 403 as a
server refusing a request without valid credentials (schemathesis 4.32.5,
specs/openapi/checks.py `_enforces_auth`, AUTH_REJECTION_STATUSES = {401, 403}). govdata's paid
operations declare three alternative security schemes (partner token, x402 v2 payment, x402 v1
payment) and, as their documents say and as the x402 protocol requires, answer a request without
credentials with `402 Payment Required` carrying the payment challenge in the `PAYMENT-REQUIRED`
header (documented as the 402 response of every paid operation). That is a refusal: no data is
served. Reading it as "authentication not enforced" is the check being wrong about this API,
not the API being wrong.

So a 402 that carries an x402 challenge (`PAYMENT-REQUIRED` header) counts as enforcement. Any
other 402, and any 2xx to a request without credentials or with invalid ones, still fails ST401;
every other check is untouched. With this, the check also gets as far as its invalid-credentials
probes (it stopped at the first 402 before), which it never did without it.
"""

import schemathesis.specs.openapi.checks as _checks

_original_enforces_auth = _checks._enforces_auth


def _enforces_auth(response, authenticated):
    if response.status_code == 402 and response.headers.get("payment-required"):
        return True
    return _original_enforces_auth(response, authenticated)


_checks._enforces_auth = _enforces_auth
