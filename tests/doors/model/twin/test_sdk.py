"""The official anthropic SDK, unchanged, against the twin server: create, stream, count_tokens, models, and
an SDK error for each injected fault (retries off, so each fault is one request)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx2
import pytest

from .conftest import TwinServer

MODEL = "claude-sonnet-5-5"


@pytest.fixture
def client(twin_server: TwinServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=twin_server.base_url, api_key="placeholder", max_retries=0) as sdk:
        yield sdk


def _user(text: str) -> list[anthropic.types.MessageParam]:
    return [{"role": "user", "content": text}]


def test_create(client: anthropic.Anthropic) -> None:
    message = client.messages.create(model=MODEL, max_tokens=100, messages=_user("the weather?"))
    assert message.content[0].type == "text" and message.content[0].text == "Sunny, 21 degrees."
    assert (message.stop_reason, message.model, message.usage.input_tokens) == ("end_turn", MODEL, 3)
    assert message.usage.output_tokens == 5
    assert message._request_id is not None and message._request_id.startswith("req_twin")


def test_stream_text_and_final_message(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model=MODEL, max_tokens=100, messages=_user("the weather?")) as stream:
        chunks = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(chunks) == 5 and "".join(chunks) == "Sunny, 21 degrees."
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cache_read_input_tokens) == (3, 5, 0)


def test_stream_of_a_tool_call(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model=MODEL, max_tokens=100, messages=_user("list files please")) as stream:
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["text", "tool_use"]
    tool = final.content[1]
    assert tool.type == "tool_use" and (tool.name, tool.input) == ("bash", {"command": "ls"})
    assert final.stop_reason == "tool_use"


def test_stream_with_thinking_and_cache(client: anthropic.Anthropic) -> None:
    system: list[anthropic.types.TextBlockParam] = [
        {"type": "text", "text": "p" * 4000, "cache_control": {"type": "ephemeral"}}]
    usages = []
    for _ in range(2):
        with client.messages.stream(model="claude-haiku-5-5", max_tokens=50, system=system,
                                    messages=_user("cache me")) as stream:
            usages.append(stream.get_final_message().usage)
    assert (usages[0].cache_creation_input_tokens, usages[0].cache_read_input_tokens) == (1000, 0)
    assert (usages[1].cache_creation_input_tokens, usages[1].cache_read_input_tokens) == (0, 1000)
    assert usages[1].cache_creation is not None and usages[1].cache_creation.ephemeral_5m_input_tokens == 0


def test_max_tokens_is_obeyed(client: anthropic.Anthropic) -> None:
    message = client.messages.create(model=MODEL, max_tokens=2, messages=_user("the weather?"))
    assert (message.stop_reason, message.usage.output_tokens) == ("max_tokens", 2)


def test_count_tokens(client: anthropic.Anthropic) -> None:
    counted = client.messages.count_tokens(model=MODEL, system="abcd", messages=_user("abcdefgh"))
    assert counted.input_tokens == 3


def test_models_list(client: anthropic.Anthropic) -> None:
    assert [model.id for model in client.models.list()] == ["claude-sonnet-5-5", "claude-haiku-5-5"]
    assert client.models.retrieve("claude-haiku-5-5").id == "claude-haiku-5-5"
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nope")


def test_beta_path_with_its_query_string(client: anthropic.Anthropic) -> None:
    message = client.beta.messages.create(model=MODEL, max_tokens=100, messages=_user("the weather?"),
                                          betas=["interleaved-thinking-2025-05-14"],
                                          extra_query={"beta": "true"})
    assert message.content[0].type == "text" and message.content[0].text == "Sunny, 21 degrees."


def test_429_is_a_rate_limit_error_with_retry_after(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("[twin:429][twin:retry_after=3]"))
    assert raised.value.response.headers["retry-after"] == "3"
    assert raised.value.type == "rate_limit_error"
    assert raised.value.request_id is not None and raised.value.request_id.startswith("req_twin")


def test_529_is_an_overloaded_error_also_for_a_stream(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.OverloadedError):
        client.messages.create(model=MODEL, max_tokens=10, messages=_user("[twin:529]"))
    with pytest.raises(anthropic.OverloadedError), client.messages.stream(
            model=MODEL, max_tokens=10, messages=_user("[twin:529]")) as stream:
        list(stream.text_stream)


def test_an_error_event_is_an_api_status_error_with_status_200(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.APIStatusError) as raised, client.messages.stream(
            model=MODEL, max_tokens=10, messages=_user("hello [twin:error=4]")) as stream:
        list(stream.text_stream)
    assert not isinstance(raised.value, anthropic.OverloadedError)  # measured: the SDK does not map it
    assert (raised.value.status_code, raised.value.type) == (200, "overloaded_error")


def test_a_cut_stream_raises_from_the_iterator_unwrapped(client: anthropic.Anthropic) -> None:
    """Recorded: a chunked stream cut mid-way is httpx2's RemoteProtocolError out of the SDK's iterator (over a
    close-delimited body the SDK would end silently, /work/shared/notes/clients-and-tools.md A.1)."""
    seen: list[str] = []
    with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"), client.messages.stream(
            model=MODEL, max_tokens=100, messages=_user("the weather? [twin:cut=5]")) as stream:
        seen.extend(stream.text_stream)
    assert seen == ["Sunn", "y, 2"]  # five events came: start, block start, ping, two deltas; each one whole
    # the connection pool survives: the next call works
    assert client.messages.create(model=MODEL, max_tokens=10, messages=_user("again")).stop_reason == "end_turn"


def test_a_cut_json_reply_is_a_connection_error(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(model=MODEL, max_tokens=100, messages=_user("the weather? [twin:cut=1]"))


def test_a_slow_stream_still_says_everything(client: anthropic.Anthropic) -> None:
    with client.messages.stream(model=MODEL, max_tokens=100, messages=_user("the weather? [twin:slow=20]")) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Sunny, 21 degrees." and final.stop_reason == "end_turn"


def test_the_sdk_refusal_of_a_bad_request_is_a_bad_request_error(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(model=MODEL, max_tokens=0, messages=_user("x"))
    assert raised.value.type == "invalid_request_error"


async def test_the_async_client_streams_under_trio(twin_server: TwinServer) -> None:
    async with anthropic.AsyncAnthropic(base_url=twin_server.base_url, api_key="placeholder",
                                        max_retries=0) as sdk:
        async with sdk.messages.stream(model=MODEL, max_tokens=100, messages=_user("the weather?")) as stream:
            text = "".join([chunk async for chunk in stream.text_stream])
            final = await stream.get_final_message()
        with pytest.raises(anthropic.RateLimitError):
            await sdk.messages.create(model=MODEL, max_tokens=10, messages=_user("[twin:429]"))
    assert text == "Sunny, 21 degrees." and final.usage.output_tokens == 5
