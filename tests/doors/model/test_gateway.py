"""The model door's routes against the in-process twin, with the official anthropic SDK as the client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
import trio

from doors.model._upstream import UpstreamRequest, UpstreamResponse
from doors.model.twin import TwinUpstream
from tests.doors.model._harness import MODEL, RecordingUpstream, served, twin_config

HELLO = [{"role": "user", "content": "hello there"}]


def _create(**extra: Any) -> Any:
    return lambda client: client.messages.with_raw_response.create(model=MODEL, max_tokens=64, messages=HELLO,
                                                                   **extra)


async def test_create_answers_the_message_with_a_request_id_and_one_audit_line() -> None:
    async with served(twin_config()) as door:
        raw = await door.run(_create())
    message = raw.parse()
    assert message.content[0].text and message.usage.output_tokens > 0
    assert raw.headers["request-id"].startswith("req_sh")
    (call,) = door.audit.calls()
    assert call["request_id"] == raw.headers["request-id"] and call["ended"] == "complete" and call["caller"] == "app"
    assert 0 < call["charged_microusd"] <= call["reserved_microusd"]
    assert call["tokens"]["output"] == message.usage.output_tokens and call["streamed"] is False
    assert door.gateway.ledger.spent == call["charged_microusd"] and door.gateway.ledger.reserved == 0
    text = json.dumps(door.audit.reports + door.audit.acts)
    assert "hello there" not in text and message.content[0].text not in text  # never prompt or completion


async def test_a_stream_ends_with_message_stop_and_is_charged_its_usage() -> None:
    async with served(twin_config()) as door:
        def stream(client: anthropic.Anthropic) -> Any:
            with client.messages.stream(model=MODEL, max_tokens=64, messages=HELLO) as events:
                return events.get_final_message()
        message = await door.run(stream)
    assert message.stop_reason == "end_turn"
    (call,) = door.audit.calls()
    assert call["streamed"] is True and call["ended"] == "complete"
    assert call["tokens"]["output"] == message.usage.output_tokens
    assert 0 < call["charged_microusd"] <= call["reserved_microusd"]


async def test_count_tokens_and_models() -> None:
    async with served(twin_config(models=[MODEL, "claude-opus-5-5"])) as door:
        counted = await door.run(lambda c: c.messages.count_tokens(model=MODEL, messages=HELLO))
        listed = await door.run(lambda c: [m.id for m in c.models.list()])
    assert counted.input_tokens > 0
    assert listed == [MODEL, "claude-opus-5-5"]


@pytest.mark.parametrize(("marker", "error"), [
    ("[twin:429]", anthropic.RateLimitError),
    ("[twin:529]", anthropic.OverloadedError),
    ("[twin:400]", anthropic.BadRequestError),
])
async def test_an_injected_error_reaches_the_sdk_as_its_class(marker: str, error: type[Exception]) -> None:
    async with served(twin_config()) as door:
        with pytest.raises(error) as caught:
            await door.run(lambda c: c.messages.create(model=MODEL, max_tokens=64,
                                                       messages=[{"role": "user", "content": marker}]))
    assert caught.value.request_id.startswith("req_sh")  # type: ignore[attr-defined]
    (call,) = door.audit.calls()
    assert call["charged_microusd"] == 0 and call["ended"] == "upstream-error"


@pytest.mark.parametrize("marker", ["[twin:cut=3]", "[twin:error=3]"])
async def test_a_stream_that_cannot_finish_raises_in_the_sdk_and_is_charged_its_reservation(marker: str) -> None:
    async with served(twin_config()) as door:
        def stream(client: anthropic.Anthropic) -> Any:
            with client.messages.stream(model=MODEL, max_tokens=64,
                                        messages=[{"role": "user", "content": marker}]) as events:
                return events.get_final_message()
        with pytest.raises(anthropic.APIStatusError):
            await door.run(stream)
    (call,) = door.audit.calls()
    assert call["ended"] == "cut" and call["charged_microusd"] == call["reserved_microusd"] > 0
    assert door.gateway.ledger.spent == call["reserved_microusd"]


async def test_a_model_outside_the_allow_row_is_refused_naming_the_row() -> None:
    async with served(twin_config(models=[MODEL])) as door:
        with pytest.raises(anthropic.NotFoundError) as caught:
            await door.run(lambda c: c.messages.create(model="claude-opus-5-5", max_tokens=64, messages=HELLO))
    body: Any = caught.value.body
    assert body["error"]["details"]["error_code"] == "doors.model.models"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert door.gateway.ledger.spent == 0 and door.audit.acts == []  # refused before anything was forwarded


async def test_the_budget_spent_is_a_402_billing_error_that_says_do_not_retry() -> None:
    async with served(twin_config(budget_microusd=0)) as door:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await door.run(_create())
    assert caught.value.status_code == 402
    body: Any = caught.value.body
    assert body["error"]["type"] == "billing_error"
    assert body["error"]["details"]["error_code"] == "doors.model.budget_microusd"
    assert caught.value.response.headers["x-should-retry"] == "false"


async def test_the_clients_credential_is_never_forwarded_and_the_released_key_is() -> None:
    recorder = RecordingUpstream(TwinUpstream(None))

    async def key() -> bytes:
        return b"sk-released-for-this-call"

    async with served(twin_config(), upstream=recorder, key_source=key) as door:
        await door.run(_create(extra_headers={"anthropic-beta": "a-beta,b-beta", "authorization": "Bearer sk-x"}))
    (sent,) = recorder.requests
    headers = dict(sent.headers)
    assert headers[b"x-api-key"] == b"sk-released-for-this-call"
    assert headers[b"anthropic-beta"] == b"a-beta,b-beta" and b"anthropic-version" in headers
    assert not any(b"sk-client" in value or b"sk-x" in value for _, value in sent.headers)
    assert b"authorization" not in headers and sent.path == b"/v1/messages"


async def test_fifty_parallel_streams_against_a_budget_for_ten_never_overspend() -> None:
    async with served(twin_config()) as door:
        await door.run(_create(stream=True))
        one = door.audit.acts[0]["reserved_microusd"]  # model.open: queued before forwarding
    budget = 10 * one
    async with served(twin_config(budget_microusd=budget)) as door:
        outcomes: list[str] = []

        async def one_stream() -> None:
            def stream(client: anthropic.Anthropic) -> str:
                try:
                    with client.messages.stream(model=MODEL, max_tokens=64,
                                                messages=[{"role": "user", "content": "[twin:slow=20] go"}]) as s:
                        s.get_final_message()
                    return "ok"
                except anthropic.APIStatusError as exc:
                    return str(exc.status_code)
            outcomes.append(await door.run(stream))

        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(one_stream)
        ledger = door.gateway.ledger
        assert ledger.spent <= budget and ledger.reserved == 0
        assert "ok" in outcomes and "402" in outcomes and set(outcomes) <= {"ok", "402"}
        assert sum(c["charged_microusd"] for c in door.audit.calls()) == ledger.spent


class _HeldStream:
    """An upstream whose stream sends its first event, then waits for the test before it goes on."""

    name = "held"

    def __init__(self) -> None:
        self.go_on = trio.Event()

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n'
            await self.go_on.wait()
            yield b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        return UpstreamResponse(200, (), body())

    async def aclose_response(self, response: UpstreamResponse) -> None:
        pass


async def test_each_event_reaches_the_client_as_the_upstream_sends_it() -> None:
    upstream = _HeldStream()
    async with served(twin_config(), upstream=upstream) as door:
        stream = await trio.open_tcp_stream("127.0.0.1", door.port)
        body = json.dumps({"model": MODEL, "max_tokens": 16, "stream": True, "messages": HELLO}).encode()
        await stream.send_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                              b"content-length: %d\r\n\r\n" % len(body) + body)
        seen = b""
        with trio.fail_after(30):  # a guard against a hang, not a threshold: the event arrives or it never does
            while b"message_start" not in seen:
                seen += await stream.receive_some(65536)
        upstream.go_on.set()
        with trio.fail_after(30):
            while b"message_stop" not in seen:
                seen += await stream.receive_some(65536)
        await stream.aclose()


async def test_ten_thousand_tiny_deltas_stream_through_and_are_counted() -> None:
    async with served(twin_config()) as door:
        def stream(client: anthropic.Anthropic) -> Any:
            with client.messages.stream(model=MODEL, max_tokens=20000, messages=[
                    {"role": "user", "content": "[twin:tokens=10000] go"}]) as events:
                return events.get_final_message()
        message = await door.run(stream)
    assert message.usage.output_tokens == 10000 and message.stop_reason == "end_turn"
    (call,) = door.audit.calls()
    assert call["ended"] == "complete" and call["tokens"]["output"] == 10000
    assert call["charged_microusd"] <= call["reserved_microusd"]


async def test_claude_codes_head_probe_gets_a_bodiless_404_and_the_door_goes_on() -> None:
    # Claude Code sends HEAD /api/hello to its base URL; a body in the answer broke h11 and ended the listener.
    async with served(twin_config()) as door:
        stream = await trio.open_tcp_stream("127.0.0.1", door.port)
        await stream.send_all(b"HEAD /api/hello HTTP/1.1\r\nhost: x\r\n\r\n"
                              b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer = b""
        with trio.fail_after(30):  # a guard against a hang, not a threshold
            while chunk := await stream.receive_some(65536):
                answer += chunk
        head, _, rest = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 404") and b"request-id: req_sh" in head and b"content-length: 0" in head
        assert rest.startswith(b"HTTP/1.1 200") and MODEL.encode() in rest
        listed = await door.run(lambda c: [m.id for m in c.models.list()])
    assert MODEL in listed


class _Answers:
    """An upstream that answers every request with `status` and an empty body."""

    name = "odd"

    def __init__(self, status: int) -> None:
        self.status = status

    async def exchange(self, request: UpstreamRequest) -> UpstreamResponse:
        async def body() -> AsyncIterator[bytes]:
            if False:
                yield b""
        return UpstreamResponse(self.status, (), body())

    async def aclose_response(self, response: UpstreamResponse) -> None:
        pass


@pytest.mark.parametrize("status", [101, 204, 304])
async def test_an_upstream_status_that_cannot_carry_an_answer_is_a_502_and_the_door_goes_on(status: int) -> None:
    async with served(twin_config(), upstream=_Answers(status)) as door:
        for _ in range(2):  # the same connection pool, the same listener: still serving
            with pytest.raises(anthropic.APIStatusError) as caught:
                await door.run(_create())
            assert caught.value.status_code == 502
    assert door.gateway.ledger.spent == 0 and door.gateway.ledger.reserved == 0


async def test_bodies_past_what_the_door_may_hold_at_once_are_a_529_and_the_door_goes_on() -> None:
    config = twin_config(max_body_bytes=64 * 1024, max_body_bytes_in_flight=100 * 1024)
    async with served(config) as door:
        holders = []
        for _ in range(2):  # two slow uploads of 60 KiB each: the second passes the 100 KiB held at once
            stream = await trio.open_tcp_stream("127.0.0.1", door.port)
            await stream.send_all(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 65000\r\n\r\n"
                                  + b" " * 60 * 1024)
            holders.append(stream)
            with trio.fail_after(30):  # the first upload is held by the door before the second starts
                while not holders[1:] and door.gateway.bodies.held < 60 * 1024:
                    await trio.sleep(0.01)
        answer = b""
        with trio.fail_after(30):  # a guard against a hang, not a threshold
            while b"\r\n\r\n" not in answer:
                answer += await holders[1].receive_some(65536)
        assert answer.startswith(b"HTTP/1.1 529") and b"retry-after: 1" in answer
        assert b"doors.model.max_body_bytes_in_flight" in answer
        for stream in holders:
            await stream.aclose()
        assert (await door.run(_create())).parse().content[0].text  # still serving
    assert door.gateway.bodies.held == 0
