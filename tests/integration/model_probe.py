"""Runs confined as the app in tests/integration/test_model_session.py: the official anthropic SDK against the
model door, on both transports, then raw HTTP the SDK would never send. One JSON line per probe."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from typing import Any

import anthropic

from doors.model.client import anthropic_client

MODEL = "claude-haiku-4-5"
HELLO = [{"role": "user", "content": "hello"}]
FAULTS = ("[twin:429]", "[twin:529]", "[twin:cut=3]", "[twin:error=3]")


def report(name: str, **fields: Any) -> None:
    print(json.dumps({"probe": name, **fields}), flush=True)


def _fault(client: anthropic.Anthropic, marker: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": marker}]
    try:
        if marker in ("[twin:429]", "[twin:529]"):
            client.messages.create(model=MODEL, max_tokens=32, messages=messages)
        else:
            with client.messages.stream(model=MODEL, max_tokens=32, messages=messages) as events:
                events.get_final_message()
    except anthropic.APIStatusError as exc:
        return {"error": type(exc).__name__, "status": exc.status_code, "request_id": exc.request_id}
    return {"error": None}


def sdk(transport: str, client: anthropic.Anthropic) -> None:
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=32, messages=HELLO)
    message = raw.parse()
    report(f"{transport}.create", text=message.content[0].text, request_id=raw.headers.get("request-id"))
    with client.messages.stream(model=MODEL, max_tokens=32, messages=HELLO) as events:
        final = events.get_final_message()
    report(f"{transport}.stream", stop_reason=final.stop_reason, output_tokens=final.usage.output_tokens)
    report(f"{transport}.count_tokens", input_tokens=client.messages.count_tokens(model=MODEL,
                                                                                  messages=HELLO).input_tokens)
    report(f"{transport}.models", ids=[model.id for model in client.models.list()])
    report(f"{transport}.faults", **{marker: _fault(client, marker) for marker in FAULTS})
    try:
        client.messages.create(model="claude-opus-5-5", max_tokens=32, messages=HELLO)
        report(f"{transport}.outside", error=None)
    except anthropic.APIStatusError as exc:
        body: Any = exc.body
        report(f"{transport}.outside", error=type(exc).__name__, row=body["error"]["details"]["error_code"])


def _raw(head: bytes, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """One raw HTTP/1.1 exchange with the plain listener: status and JSON body."""
    host, port = os.environ["ANTHROPIC_BASE_URL"].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, json.loads(answer.split(b"\r\n\r\n", 1)[1] or b"{}")


def _post(body: bytes, length: int | None = None) -> bytes:
    return (b"POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"anthropic-version: 2023-06-01\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n" % (len(body) if length is None else length))


def raw_refusals() -> None:
    status, body = _raw(_post(b"{not json"), b"{not json")
    report("raw.malformed", status=status, type=body["error"]["type"])
    status, body = _raw(_post(b"x", 40 * 1024 * 1024))
    report("raw.oversized", status=status, type=body["error"]["type"])
    # A client that asks for a long slow stream and never reads it: the door must go on serving others.
    host, port = os.environ["ANTHROPIC_BASE_URL"].removeprefix("http://").split(":")
    stuck = socket.create_connection((host, int(port)))
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = json.dumps({"model": MODEL, "max_tokens": 4000, "stream": True,
                          "messages": [{"role": "user", "content": "[twin:slow=1] " + "word " * 3000}]}).encode()
    stuck.sendall(_post(request) + request)
    client = anthropic.Anthropic(max_retries=0)
    report("raw.alive", text=client.messages.create(model=MODEL, max_tokens=32, messages=HELLO).content[0].text)
    stuck.close()


PARALLEL_PROMPT = "[twin:slow=100] go"  # each stream lasts a few hundred ms: all 50 are open together


def parallel(count: int) -> None:
    """`count` streams at once against the session's budget; what each ended as."""
    from concurrent.futures import ThreadPoolExecutor

    start = threading.Barrier(count)  # every client made before any asks: the streams overlap

    def one(_: int) -> str:
        client = anthropic.Anthropic(max_retries=0)
        start.wait()
        try:
            with client.messages.stream(model=MODEL, max_tokens=64,
                                        messages=[{"role": "user", "content": PARALLEL_PROMPT}]) as events:
                events.get_final_message()
            return "ok"
        except anthropic.APIStatusError as exc:
            return str(exc.status_code)

    with ThreadPoolExecutor(count) as pool:
        outcomes = list(pool.map(one, range(count)))
    report("parallel", outcomes=outcomes)
    report("cut", **_fault(anthropic.Anthropic(max_retries=0), "[twin:cut=3]"))


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    report("env", base_url=os.environ.get("ANTHROPIC_BASE_URL"), api_key=os.environ.get("ANTHROPIC_API_KEY"),
           no_proxy=os.environ.get("NO_PROXY"))
    if which == "all":
        sdk("plain", anthropic.Anthropic(max_retries=0))
        sdk("mtls", anthropic_client(max_retries=0))
        raw_refusals()
    elif which == "parallel":
        parallel(int(sys.argv[2]))
    elif which == "hold":
        answer = anthropic.Anthropic(max_retries=0).messages.with_raw_response.create(
            model=MODEL, max_tokens=32, messages=HELLO)
        report("hold", text=answer.parse().content[0].text, headers=dict(answer.headers),
               body=answer.http_response.text)
        go = os.path.join(os.environ["TMPDIR"], "sharness-go")
        deadline = time.monotonic() + 120
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.02)
    elif which == "once":
        report("once", text=anthropic.Anthropic(max_retries=0).messages.create(
            model=MODEL, max_tokens=32, messages=HELLO).content[0].text)
    report("done")


if __name__ == "__main__":
    main()
