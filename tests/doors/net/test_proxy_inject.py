"""Bound credentials on the test network: the door terminates the app's TLS for a bound host with its egress leaf,
verifies the real upstream, injects the secret and redacts its echo. Real clients (curl, git) in the app ns."""

from __future__ import annotations

import datetime as dt
import json
import os
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
import trustme
from cryptography.hazmat.primitives import serialization

from doors.net._egress_tls import ALPN, EgressConfig, contexts_from_pems, upstream_context
from doors.net._inject import Injection
from doors.net._policy import Allowlist
from doors.net.proxy import Proxy
from pki.egress import issue_host_leaf, leaves_pem, new_egress_ca, split_leaves

from .conftest import ALLOW, WAN_V4, TestNet, listen_in
from .git_server import GitLog, GitServer, make_repository, serve_git

pytestmark = pytest.mark.root

TOKEN = b"ghp_injected0123456789abcdefTOKEN"
BOUND = "git.sharness.test"
GIT_PORT = 8443


@dataclass
class Bound:
    net: TestNet
    port: int  # the injecting proxy, in the app ns
    egress_ca: Path  # what the app trusts: the egress CA (plus, here, nothing else)
    upstream_ca: Path  # the test upstream's CA (what a tunnel to an unbound host needs)
    git: GitLog
    repo_root: Path
    releases: list[tuple[str, str]]


def _egress(tmp: Path, hosts: tuple[str, ...]) -> tuple[dict[str, ssl.SSLContext], Path]:
    now = dt.datetime.now(dt.UTC)
    key, ca = new_egress_ca(hosts, 600, now)
    pems = split_leaves(leaves_pem({host: issue_host_leaf(key, ca, host, now, 600) for host in hosts}))
    path = tmp / "egress-ca.pem"
    path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return contexts_from_pems(pems), path


def _upstream_trust(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    context.set_alpn_protocols(ALPN)
    return context


async def start_injecting(net: TestNet, tmp: Path, rules: list[dict[str, object]], *, trust_upstream: bool = True,
                          releases: list[tuple[str, str]] | None = None) -> tuple[Proxy, int, Path]:
    """A proxy with `rules` on its own port in the app ns; its egress CA's PEM path."""
    contexts, egress_ca = _egress(tmp, tuple(sorted({str(rule["host"]).split(":")[0] for rule in rules})))
    injection = Injection.from_rows(rules)
    upstream = _upstream_trust(net.ca) if trust_upstream else upstream_context(None)  # the system store
    allow = {**ALLOW, "app": [*ALLOW["app"], f"{BOUND}:{GIT_PORT}", "ok.sharness.test:8443"]}
    config = net.config(allowlist=Allowlist.from_rows(allow), egress=EgressConfig(injection, contexts, upstream))
    seen = releases if releases is not None else []

    async def credentials(name: str, host: str) -> bytes:
        seen.append((name, host))
        return TOKEN

    port, net._next_port = net._next_port, net._next_port + 1
    proxy = Proxy(config, net.opened.append, net.resolver, report=net.audit.append, credentials=credentials)
    await net.nursery.start(proxy.serve, trio.SocketListener(listen_in(net.names.app, "127.0.0.1", port)), "app")
    return proxy, port, egress_ca


RULES: list[dict[str, object]] = [{"host": f"{BOUND}:{GIT_PORT}", "secret": "gh", "format": "basic"}]


@pytest.fixture
async def bound(net: TestNet, tmp_path: Path) -> AsyncIterator[Bound]:
    net.zone.static[(BOUND, "A")] = [WAN_V4]
    net.zone.static[(BOUND, "AAAA")] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    net.ca.issue_cert(BOUND, "ok.sharness.test").configure_cert(context)
    root = tmp_path / "repos"
    root.mkdir()
    make_repository(root, "project.git")
    log = GitLog()
    server = GitServer(root, TOKEN, context, log)
    await net.nursery.start(serve_git, trio.SocketListener(listen_in(net.names.wan, WAN_V4, GIT_PORT)), server)
    releases: list[tuple[str, str]] = []
    _, port, egress_ca = await start_injecting(net, tmp_path, RULES, releases=releases)
    upstream_ca = tmp_path / "upstream-ca.pem"
    net.ca.cert_pem.write_to_path(str(upstream_ca))
    yield Bound(net, port, egress_ca, upstream_ca, log, root, releases)


async def in_app_ns(net: TestNet, argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    full = ["ip", "netns", "exec", net.names.app, "env", "-i", *(f"{k}={v}" for k, v in (env or {}).items()), *argv]
    done = await trio.run_process(full, capture_stdout=True, capture_stderr=True, check=False)
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


async def curl(bound: Bound, url: str, *args: str, ca: Path | None = None) -> tuple[int, str, str]:
    return await in_app_ns(bound.net, ["curl", "-sS", "--max-time", "10", "-x", f"http://127.0.0.1:{bound.port}",
                                       "--cacert", str(ca or bound.egress_ca), *args, url], {"PATH": "/usr/bin:/bin"})


def _no_token(*texts: str) -> None:
    for text in texts:
        assert TOKEN.decode() not in text
        assert "Z2hwX2luamVjdGVk" not in text  # nor the start of its base64 form


async def test_curl_gets_the_token_injected_and_never_sees_it(bound: Bound) -> None:
    code, out, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/project.git/info/refs?service=git-upload-pack",
                                "-w", "\n%{http_code} %{http_version}")
    assert code == 0, err
    assert out.endswith("200 1.1"), out[-200:]
    assert bound.git.requests[-1]["authorised"] and bound.releases == [("gh", BOUND)]
    _no_token(out, err)
    event = bound.net.events(path="/project.git/info/refs")[-1]
    assert (event["method"], event["status"], event["credential_name"], event["reason"]) == (
        "GET", 200, "gh", "injected")
    assert event["row"] == "doors.net.inject[0]" and event["bytes_down"] > 0
    _no_token(json.dumps(bound.net.audit), json.dumps(bound.net.opened))
    assert "service=" not in json.dumps(bound.net.audit)  # the path without its query


async def test_the_apps_own_authorization_is_dropped(bound: Bound) -> None:
    code, _, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/echo", "-H", "Authorization: Bearer app-own",
                              "-H", "Proxy-Authorization: Basic YXBwOm93bg==")
    assert code == 0, err
    sent = bound.git.requests[-1]["authorization"]
    assert sent.startswith("Basic ") and "app-own" not in sent
    assert [r["authorization"] for r in bound.git.requests].count(sent) == 1


async def test_an_upstream_echoing_the_token_is_redacted(bound: Bound) -> None:
    code, out, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/echo", "-i")
    assert code == 0, err
    assert "you sent: ****" in out and "x-echo: ****" in out.lower(), out
    _no_token(out, err)


async def test_http2_is_not_offered_so_curl_falls_back(bound: Bound) -> None:
    code, out, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/echo", "--http2", "-w", "\n%{http_version}")
    assert code == 0, err
    assert out.endswith("\n1.1"), out


async def test_an_h2_only_client_gets_no_protocol_and_its_preface_is_refused(bound: Bound) -> None:
    stream = await bound.net.client(bound.port)
    await stream.send_all(f"CONNECT {BOUND}:{GIT_PORT} HTTP/1.1\r\nHost: {BOUND}\r\n\r\n".encode())
    assert b" 200 " in await stream.receive_some(4096)
    context = ssl.create_default_context(cafile=str(bound.egress_ca))
    context.set_alpn_protocols(["h2"])
    tls = trio.SSLStream(stream, context, server_hostname=BOUND)
    await tls.do_handshake()
    assert tls.selected_alpn_protocol() is None
    await tls.send_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    answer = await tls.receive_some(4096)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert bound.git.requests == []


async def test_a_host_header_other_than_the_sni_is_refused(bound: Bound) -> None:
    code, out, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/echo", "-H", "Host: ok.sharness.test",
                                "-w", "\n%{http_code}")
    assert code == 0, err
    assert out.endswith("421") and '"reason":"host-mismatch"' in out, out
    assert bound.git.requests == [] and bound.releases == []


async def test_an_unbound_host_stays_a_tunnel_with_its_real_certificate(bound: Bound) -> None:
    """The egress CA holds no leaf for an unbound host: trusting only it, the app cannot reach one."""
    code, _, err = await curl(bound, "https://ok.sharness.test/")
    assert code == 60, err  # CURLE_PEER_FAILED_VERIFICATION: the real upstream's leaf, not the egress CA's
    code, out, err = await curl(bound, "https://ok.sharness.test/", ca=bound.upstream_ca)
    assert code == 0 and '"target": "/"' in out, err
    assert bound.releases == []


async def test_an_untrusted_upstream_is_a_502_and_gets_no_token(net: TestNet, tmp_path: Path) -> None:
    net.zone.static[(BOUND, "A")] = [WAN_V4]
    net.zone.static[(BOUND, "AAAA")] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert(BOUND).configure_cert(context)  # a CA the door does not trust
    log = GitLog()
    server = GitServer(tmp_path, TOKEN, context, log)
    await net.nursery.start(serve_git, trio.SocketListener(listen_in(net.names.wan, WAN_V4, GIT_PORT)), server)
    _, port, egress_ca = await start_injecting(net, tmp_path, RULES, trust_upstream=False)
    bound = Bound(net, port, egress_ca, egress_ca, log, tmp_path, [])
    code, out, err = await curl(bound, f"https://{BOUND}:{GIT_PORT}/echo", "-w", "\n%{http_code}")
    assert code == 0 and out.endswith("502") and '"reason":"upstream-tls"' in out, (out, err)
    assert "not trusted" in out and log.requests == []


def _git_env(bound: Bound, home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "GIT_TERMINAL_PROMPT": "0",
            "https_proxy": f"http://127.0.0.1:{bound.port}", "GIT_SSL_CAINFO": str(bound.egress_ca),
            "GIT_AUTHOR_NAME": "app", "GIT_AUTHOR_EMAIL": "app@t", "GIT_COMMITTER_NAME": "app",
            "GIT_COMMITTER_EMAIL": "app@t"}


async def test_git_clone_and_push_with_the_token_injected(bound: Bound, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = _git_env(bound, home)
    url = f"https://{BOUND}:{GIT_PORT}/project.git"
    code, _, err = await in_app_ns(bound.net, ["git", "clone", "-q", url, str(home / "clone")], env)
    assert code == 0, err
    assert (home / "clone" / "README").read_text() == "seeded\n"
    (home / "clone" / "NEW").write_text("from the app\n")
    for argv in (["add", "NEW"], ["commit", "-qm", "app"], ["push", "-q", "origin", "main"]):
        code, _out, err = await in_app_ns(bound.net, ["git", "-C", str(home / "clone"), *argv], env)
        assert code == 0, (argv, err)
    log = await trio.run_process(["git", "-C", str(bound.repo_root / "project.git"), "log", "--format=%s", "main"],
                                 capture_stdout=True)
    assert log.stdout.decode().split() == ["app", "seed"]
    assert all(r["authorised"] for r in bound.git.requests) and len(bound.releases) == len(bound.git.requests)
    _no_token(json.dumps(bound.net.audit), *(p.read_text(errors="replace") for p in (home / "clone" / ".git").rglob(
        "config")))


async def test_git_clone_fails_without_the_binding(net: TestNet, bound: Bound, tmp_path: Path) -> None:
    """The same clone through a door with no rule for the host: a plain tunnel, the server's 401, no token."""
    proxy = Proxy(net.config(allowlist=Allowlist.from_rows({"app": [f"{BOUND}:{GIT_PORT}"]})), net.opened.append,
                  net.resolver, report=net.audit.append)
    port, net._next_port = net._next_port, net._next_port + 1
    await net.nursery.start(proxy.serve, trio.SocketListener(listen_in(net.names.app, "127.0.0.1", port)), "app")
    home = tmp_path / "home-unbound"
    home.mkdir()
    env = {**_git_env(bound, home), "https_proxy": f"http://127.0.0.1:{port}", "GIT_SSL_CAINFO": str(bound.upstream_ca)}
    code, _, err = await in_app_ns(net, ["git", "clone", "-q", f"https://{BOUND}:{GIT_PORT}/project.git",
                                         str(home / "clone")], env)
    assert code != 0 and ("could not read Username" in err or "401" in err or "Authentication" in err), err
    assert bound.git.requests and not any(r["authorised"] for r in bound.git.requests)
    assert not os.path.exists(home / "clone" / "README")
