"""The fake model provider keeps the real API's rules the agent tests rely on: it refuses a
request without a key and a conversation the API would refuse, as the API does."""

from __future__ import annotations

from typing import Any

import aiohttp
import openai
import pytest

from tests.fakes.chat_server import chat_server

CALL = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


async def test_the_fake_refuses_what_the_api_refuses() -> None:
    async with chat_server({}) as server:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
        good: list[Any] = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a b"},
        ]
        reply = await client.chat.completions.create(model="m", messages=good)
        assert reply.choices[0].message.content == "ok"
        unanswered = [*good[:2], {"role": "user", "content": "and?"}]
        stray = [{"role": "user", "content": "hi"}, good[2]]
        for messages in (unanswered, good[:2], stray):
            with pytest.raises(openai.BadRequestError, match="tool"):
                await client.chat.completions.create(model="m", messages=messages)
        async with aiohttp.ClientSession() as session:
            url = f"{server.url}/chat/completions"
            async with session.post(url, json={"model": "m", "messages": good}) as resp:
                assert resp.status == 401
        await client.close()
