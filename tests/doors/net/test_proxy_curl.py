"""Real clients: curl through the proxy from the app namespace, and what happens without the proxy."""

from __future__ import annotations

import errno
import os

import pytest
import trio

from doors._transport.testing import scratch_dir

from . import netns
from .conftest import PROXY_PORT, WAN_V4, Names, TestNet

pytestmark = pytest.mark.root


async def curl(net: TestNet, *args: str) -> tuple[int, str, str]:
    with scratch_dir() as directory:
        ca = os.path.join(directory, "ca.pem")
        net.ca.cert_pem.write_to_path(ca)
        argv = ["ip", "netns", "exec", net.names.app, "curl", "-sS", "--max-time", "10", "--cacert", ca, *args]
        done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_curl_https_through_the_proxy(net: TestNet) -> None:
    code, out, err = await curl(net, "-x", f"http://127.0.0.1:{PROXY_PORT}", "https://ok.sharness.test/curl")
    assert code == 0, err
    assert '"target": "/curl"' in out


async def test_curl_plain_http_through_the_proxy(net: TestNet) -> None:
    code, out, err = await curl(net, "-x", f"http://127.0.0.1:{PROXY_PORT}", "http://plain.sharness.test/p")
    assert code == 0, err
    assert '"host": "plain.sharness.test"' in out


async def test_curl_refused_connect_shows_403(net: TestNet) -> None:
    code, _, err = await curl(net, "-x", f"http://127.0.0.1:{PROXY_PORT}", "https://private.sharness.test/")
    assert code == 56 and "403" in err  # CURLE_RECV_ERROR: "CONNECT tunnel failed, response 403"


async def test_curl_refused_plain_shows_the_json(net: TestNet) -> None:
    code, out, _ = await curl(net, "-x", f"http://127.0.0.1:{PROXY_PORT}", "http://evil.sharness.test/")
    assert code == 0 and '"error":"doors.net.allow"' in out and '"who":"net"' in out


async def test_curl_without_proxy_fails_in_the_kernel(net: TestNet) -> None:
    code, _, err = await curl(net, "--noproxy", "*", f"https://{WAN_V4}/")
    assert code == 7, err  # CURLE_COULDNT_CONNECT: the app ns has no route (the raw-socket test names the errno)


def test_raw_socket_from_app_ns_has_no_route(namespaces: Names) -> None:
    sock = netns.socket_in(namespaces.app)
    with sock, pytest.raises(OSError) as info:
        sock.connect((WAN_V4, 443))
    assert info.value.errno == errno.ENETUNREACH
