"""An HTTP GET of a local process's endpoint (health, readiness, metrics)."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request


async def http_get(port: int, path: str) -> tuple[int, str]:
    """GET ``http://127.0.0.1:port/path``: status and body.

    Plain urllib in a thread: every connection is closed before this returns, so polling a
    process many times never leaves a socket for the garbage collector to warn about.
    """

    def get() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            with refused:
                return refused.code, refused.read().decode()

    return await asyncio.to_thread(get)
