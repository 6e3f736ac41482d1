"""Verifies recorded webhook deliveries with the reference Python library of Standard Webhooks
(`standardwebhooks`, pinned in requirements.txt), not with govdata's own code.

Usage: python verify.py <recorded.json>, the file holding
{"secrets": ["whsec_…"], "messages": [{"headers": {"webhook-id": …}, "body": "…"}]}.
Each message must verify under one of the secrets, and fail once its body is altered.
Prints {"verified": N, "types": [...]} and exits non-zero on the first failure.
"""
import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def verifies(secret, body, headers):
    try:
        return Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return None


recorded = json.load(open(sys.argv[1], encoding="utf-8"))
types = []
for i, m in enumerate(recorded["messages"]):
    payloads = [p for p in (verifies(s, m["body"], m["headers"]) for s in recorded["secrets"]) if p is not None]
    if not payloads:
        sys.exit(f"message {i} ({m['headers'].get('webhook-id')}) does not verify")
    if any(verifies(s, m["body"] + " ", m["headers"]) is not None for s in recorded["secrets"]):
        sys.exit(f"message {i}: an altered body still verifies")
    types.append(payloads[0]["type"])
print(json.dumps({"verified": len(recorded["messages"]), "types": types}))
