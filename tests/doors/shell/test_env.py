"""The env rules: denied names by rule, secret-shaped values, and the environment a command gets. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from doors._refusal import DoorRefused
from doors.shell._env import command_env, command_proxy, denied_because, write_trust_bundle
from doors.shell._request import parse_run

PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


def _refused(env: Any) -> DoorRefused:
    with pytest.raises(DoorRefused) as caught:
        parse_run({"argv": ["env"], "env": env})
    return caught.value


@pytest.mark.parametrize("name", [
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PROMPT_COMMAND", "BASH_FUNC_ls%%",
    "PYTHONSTARTUP", "PERL5OPT", "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "GIT_CONFIG_COUNT", "GIT_CONFIG",
    "HOME", "TMPDIR", "HTTPS_PROXY", "http_proxy", "NO_PROXY", "GIT_TERMINAL_PROMPT", "DEBIAN_FRONTEND",
    "SHARNESS_SVID",
])
def test_denied_names_have_a_rule(name: str) -> None:
    assert denied_because(name) is not None


@pytest.mark.parametrize("name", ["PATH", "CI", "PYTHONPATH", "LANGUAGE", "MY_LD_PRELOAD", "GIT_AUTHOR_NAME"])
def test_ordinary_names_pass(name: str) -> None:
    assert denied_because(name) is None


@pytest.mark.parametrize("name", ["LD_PRELOAD", "BASH_ENV", "HOME", "HTTPS_PROXY"])
def test_denied_name_is_refused_with_row_shell_env(name: str) -> None:
    refused = _refused({name: "/tmp/x.so"})
    assert (refused.refusal.status, refused.refusal.row, refused.refusal.who) == (403, "shell.env", "shell")
    assert name in refused.refusal.detail and "/tmp/x.so" not in str(refused.refusal.shape())


@pytest.mark.parametrize("value", [PEM, "-----BEGIN RSA PRIVATE KEY-----", "x b3BlbnNzaC1rZXktdjE y",
                                   "PuTTY-User-Key-File-3: ssh-ed25519"])
def test_secret_shaped_value_is_refused_and_never_echoed(value: str) -> None:
    refused = _refused({"DEPLOY": value})
    assert refused.refusal.row == "shell.env" and refused.refusal.status == 403
    assert "private key" in refused.refusal.detail and value not in str(refused.refusal.shape())


@pytest.mark.parametrize("env", [{"1BAD": "x"}, {"A-B": "x"}, {"A": 1}, {"A": "a\0b"}, ["A=b"]])
def test_malformed_env_is_a_400(env: Any) -> None:
    assert _refused(env).refusal.status == 400


def test_command_env_is_built_from_nothing() -> None:
    asked = parse_run({"argv": ["env"], "env": {"CI": "1", "PATH": "/opt/bin:/usr/bin"}}).env
    env = command_env(asked, "/h", "/t", "http://127.0.0.1:3128", tty=False)
    assert env["HOME"] == "/h" and env["TMPDIR"] == "/t" and env["CI"] == "1" and env["PATH"] == "/opt/bin:/usr/bin"
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["DEBIAN_FRONTEND"] == "noninteractive"
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:3128" and env["TERM"] == "dumb"
    no_proxy = command_env((), "/h", "/t", None, tty=True)
    assert not any("proxy" in name.lower() for name in no_proxy) and no_proxy["TERM"] == "xterm-256color"
    assert "SSL_CERT_FILE" not in env and "SSL_CERT_FILE" not in no_proxy


def test_commands_trust_the_bundle_only_with_a_proxy_and_a_bound_host(tmp_path: Path) -> None:
    """The egress CA is what the net door answers bound hosts with: commands get it beside the system store."""
    assert write_trust_bundle(str(tmp_path), None) is None and not list(tmp_path.iterdir())
    ca = "-----BEGIN CERTIFICATE-----\nZWdyZXNz\n-----END CERTIFICATE-----\n"
    bundle = write_trust_bundle(str(tmp_path), ca)
    assert bundle is not None and Path(bundle).read_text().endswith(ca) and Path(bundle).stat().st_mode & 0o777 == 0o444
    env = command_env((), "/h", "/t", "http://127.0.0.1:3128", tty=False, trust=bundle)
    names = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")
    assert {env[name] for name in names} == {bundle}
    assert "SSL_CERT_FILE" not in command_env((), "/h", "/t", None, tty=False, trust=bundle)  # no way out: no TLS
    with pytest.raises(FileExistsError):  # made once, never over something planted
        write_trust_bundle(str(tmp_path), ca)


TOKENS = {
    "github": "ghp_" + "a1B2" * 9,
    "anthropic": "sk-ant-api03-" + "x" * 24,
    "aws": "AKIA" + "ABCDEFGHIJKLMNOP",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "url_password": "https://deploy:hunter2hunter2@pypi.example.com/simple",
}


@pytest.mark.parametrize(("shape", "value"), TOKENS.items())
def test_token_shaped_values_are_refused_naming_the_shape_and_the_keys_door(shape: str, value: str) -> None:
    refused = _refused({"TOKEN_FOR_CI": f"prefix {value} suffix"})
    assert (refused.refusal.status, refused.refusal.row) == (403, "shell.env")
    assert shape in refused.refusal.detail and "doors.keys.secrets" in refused.refusal.hint
    assert value not in str(refused.refusal.shape())


@pytest.mark.parametrize("value", ["ghp_short", "risk-assessment-" + "a" * 40, "https://pypi.org/simple",
                                   "eyJonly.one", "/usr/lib/jvm/java-17"])
def test_ordinary_values_that_resemble_no_token_pass(value: str) -> None:
    assert parse_run({"argv": ["env"], "env": {"V": value}}).env == (("V", value),)


def test_each_command_gets_the_proxy_with_its_label_as_user() -> None:
    assert command_proxy("http://127.0.0.1:3128", "c5") == "http://cmd-c5@127.0.0.1:3128"
    assert command_proxy(None, "c5") is None
    env = command_env((), "/h", "/t", command_proxy("http://127.0.0.1:3128", "c12"), tty=False)
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://cmd-c12@127.0.0.1:3128"
