"""A command the shell door runs reaches the model door as the app does (edge shell→model): the same variables,
the listener in the shell's own network namespace, and the official SDK unchanged; without the edge, neither."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration._shell import Session, final, output, py, shell_session

pytestmark = pytest.mark.root

SDK_CALL = (
    "import anthropic\n"
    "client = anthropic.Anthropic(max_retries=0)\n"
    "reply = client.messages.create(model='claude-sonnet-4-5', max_tokens=64,\n"
    "                               messages=[{'role': 'user', 'content': 'hello from a command'}])\n"
    "print(reply.content[0].text, reply.usage.output_tokens > 0)\n"
)
ENV = "import os; print(os.environ.get('ANTHROPIC_BASE_URL'), os.environ.get('NO_PROXY'))"
CONNECT = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', 3129), timeout=5).close()\n"
           "    print('connected')\nexcept OSError as exc:\n    print('refused', exc.errno)\n")


@pytest.fixture(scope="module")
def with_edge() -> Iterator[Session]:
    with shell_session([py("sdk", SDK_CALL), py("env", ENV)], model=True) as ran:
        yield ran


@pytest.fixture(scope="module")
def without_edge() -> Iterator[Session]:
    with shell_session([py("env", ENV), py("connect", CONNECT)]) as ran:
        yield ran


def test_a_command_calls_the_model_door_with_the_official_sdk_unchanged(with_edge: Session) -> None:
    probe = with_edge[0]["sdk"]
    assert final(probe)["exit_code"] == 0, output(probe, "stderr")[-2000:]
    counted = output(probe, "stdout").decode().split()[-1]
    assert counted == "True" and "twin" in output(probe, "stdout").decode()


def test_a_commands_environment_points_at_the_listener_and_past_the_proxy(with_edge: Session) -> None:
    base, no_proxy = output(with_edge[0]["env"], "stdout").decode().split()
    assert base == "http://127.0.0.1:3129" and "127.0.0.1" in no_proxy.split(",")


def test_without_the_edge_there_is_no_variable_and_no_listener(without_edge: Session) -> None:
    assert output(without_edge[0]["env"], "stdout").decode().split()[0] == "None"
    assert output(without_edge[0]["connect"], "stdout").decode().startswith("refused")
