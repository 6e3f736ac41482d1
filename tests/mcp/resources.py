"""govdata's MCP resources through the official Python SDK (`mcp`), in either protocol generation.

  --mode legacy      the initialize handshake (protocol 2025-11-25): a session,
                     `resources/subscribe`, the update on the session's GET stream
  --mode 2026-07-28  no session: `subscriptions/listen`, the update on the listen request's stream

It lists the resource templates, reads --read (if given), subscribes to --subscribe, says so on
stderr (`subscribed`), and waits up to --wait-ms for `notifications/resources/updated` naming that
URI; it says `updated <uri>` on stderr the moment one arrives. --header NAME:VALUE is sent on every
request (a partner token, say).

stdout: one line of JSON, {"protocolVersion", "templates", "read", "subscribed", "updates"}.
"""

import argparse
import asyncio
import json
import sys
import warnings

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def log(*parts: object) -> None:
    print("[resources.py]", *parts, file=sys.stderr, flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["legacy", "2026-07-28"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--read")
    parser.add_argument("--subscribe")
    parser.add_argument("--wait-ms", type=int, default=0)
    opts = parser.parse_args()
    headers = dict(h.split(":", 1) for h in opts.header)
    headers = {k.strip(): v.strip() for k, v in headers.items()}

    updates: list[str] = []
    arrived = asyncio.Event()

    def updated(uri: str) -> None:
        log("updated", uri)
        updates.append(uri)
        if uri == opts.subscribe:
            arrived.set()

    async def on_message(message: object) -> None:
        # The legacy delivery: a notification on the session's GET stream.
        if isinstance(message, types.ResourceUpdatedNotification):
            updated(message.params.uri)
        elif isinstance(message, Exception):
            log("transport:", repr(message))

    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    async with http, Client(
        streamable_http_client(opts.url, http_client=http),
        mode=opts.mode,
        message_handler=on_message,
        # A read's answer is the data of the moment: never served from the client's cache.
        cache=None,
    ) as client:
        templates = await client.list_resource_templates()
        read = None
        if opts.read:
            try:
                result = await client.read_resource(opts.read)
                read = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            except MCPError as err:
                read = {"error": err.error.message, "code": err.error.code, "data": err.error.data}
        subscribed = None
        if opts.subscribe:
            if opts.mode == "legacy":
                with warnings.catch_warnings():
                    # Deprecated as of 2026-07-28, and exactly what a 2025-11-25 client does.
                    warnings.simplefilter("ignore")
                    await client.subscribe_resource(opts.subscribe)
                subscribed = {}
                log("subscribed")
                await wait(arrived, opts)
            else:
                async with client.listen(resource_subscriptions=[opts.subscribe]) as subscription:
                    subscribed = subscription.honored.model_dump(mode="json", by_alias=True, exclude_none=True)
                    log("subscribed")

                    async def drain() -> None:
                        async for event in subscription:
                            uri = getattr(event, "uri", None)
                            if uri is not None:
                                updated(uri)

                    task = asyncio.create_task(drain())
                    await wait(arrived, opts)
                    task.cancel()
        out = {
            "protocolVersion": client.protocol_version,
            "templates": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in templates.resource_templates],
            "read": read,
            "subscribed": subscribed,
            "updates": updates,
        }
    print(json.dumps(out), flush=True)


async def wait(arrived: asyncio.Event, opts: argparse.Namespace) -> None:
    if opts.wait_ms <= 0:
        return
    try:
        await asyncio.wait_for(arrived.wait(), opts.wait_ms / 1000)
    except TimeoutError:
        log(f"no update for {opts.subscribe} within {opts.wait_ms} ms")


if __name__ == "__main__":
    asyncio.run(main())
