"""Distinct failures of a schemathesis run, from its NDJSON report.

Usage: st_summary.py REPORT.ndjson
Prints one block per distinct (code, operation, message, response status): the check, the
request that showed it (method, URL, headers other than the token) and the start of the
response body. Exits 0; the schemathesis exit code decides pass or fail.
"""

import base64
import json
import sys


def body_text(content):
    if not content:
        return ""
    if "$base64" in content:
        raw = base64.b64decode(content["$base64"])
    else:
        raw = str(content.get("body", content)).encode()
    return raw.decode("utf-8", "replace")


def problem_key(body):
    """For a problem document: its code and the parameters it blames, so that one check failing
    on two different parameters of an operation shows as two findings."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict) or "code" not in doc:
        return None
    names = sorted(f"{e.get('in')}:{e.get('name')}:{e.get('reason')}" for e in doc.get("errors") or [] if isinstance(e, dict))
    return (doc.get("code"), tuple(names))


def main():
    seen = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            interactions = finished.get("recorder", {}).get("interactions", {})
            for case_id, checks in finished.get("recorder", {}).get("checks", {}).items():
                for check in checks:
                    if check.get("status") != "failure":
                        continue
                    failure = check.get("failure_info", {}).get("failure", {})
                    interaction = interactions.get(case_id) or {}
                    request = interaction.get("request") or {}
                    response = interaction.get("response") or {}
                    status = response.get("status_code")
                    body = body_text(response.get("content"))
                    key = (failure.get("code"), failure.get("operation"), failure.get("message"), status, problem_key(body))
                    if key in seen:
                        seen[key]["count"] += 1
                        continue
                    headers = {
                        k: v for k, v in (request.get("headers") or {}).items() if k.lower() != "x-service-api-token"
                    }
                    seen[key] = {
                        "count": 1,
                        "check": check.get("name"),
                        "phase": finished.get("phase"),
                        "request": f"{request.get('method')} {request.get('uri')}",
                        "headers": headers,
                        "body": body[:400],
                    }
    if not seen:
        print("no failures")
        return
    print(f"{len(seen)} distinct failures")
    for (code, operation, message, status, _), info in sorted(seen.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        print(f"\n[{code}] {info['check']} on {operation} (phase {info['phase']}, seen {info['count']}x)")
        print("  " + (message or "").replace("\n", "\n  "))
        print(f"  request:  {info['request']}" + (f"  headers {info['headers']}" if info["headers"] else ""))
        print(f"  response: {status} {info['body']}")


if __name__ == "__main__":
    main()
