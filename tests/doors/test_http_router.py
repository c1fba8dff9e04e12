"""The router and the error shape (pure)."""

from __future__ import annotations

import json

import pytest

from doors._http import Request, Response, Route, Router, error_response, json_response
from doors._refusal import DoorRefused, Refusal


async def _ok(request: Request) -> Response:
    return json_response({"rest": request.rest})


def test_exact_route_matches_method_and_path() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    assert router.match("GET", "/v0/hello").route.path == "/v0/hello"


def test_unknown_path_is_404_naming_the_door() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(DoorRefused) as caught:
        router.match("GET", "/v0/nope")
    refusal = caught.value.refusal
    assert (refusal.status, refusal.who, refusal.row) == (404, "fs", "http.route")


def test_wrong_method_is_405_naming_the_allowed_ones() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(DoorRefused) as caught:
        router.match("POST", "/v0/hello")
    assert caught.value.refusal.status == 405
    assert "GET" in caught.value.refusal.hint


def test_prefix_route_hands_the_rest_of_the_path() -> None:
    router = Router("fs", [Route("PUT", "/v0/fs/files/*", _ok)])
    assert router.match("PUT", "/v0/fs/files/a/b.txt").rest == "a/b.txt"
    with pytest.raises(DoorRefused):
        router.match("PUT", "/v0/fs/files/")


def test_a_duplicate_route_is_refused() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(ValueError, match="already defined"):
        router.add(Route("GET", "/v0/hello", _ok))


def test_error_shape_has_the_four_keys() -> None:
    response = error_response(Refusal(409, "fs.append_only", "fs", {"path": "log"}, "append instead"))
    assert response.status == 409
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == {
        "error": "fs.append_only", "who": "fs", "detail": {"path": "log"}, "hint": "append instead"}
    assert response.header("Content-Type") == "application/json"


def test_error_shape_covers_507_for_a_spent_quota() -> None:
    response = error_response(Refusal(507, "max_total_bytes", "fs", "the session wrote 10 bytes", "raise the row"))
    assert response.status == 507
    assert isinstance(response.body, bytes)
    assert json.loads(response.body)["error"] == "max_total_bytes"


def test_error_shape_refuses_a_success_status() -> None:
    with pytest.raises(ValueError):
        error_response(Refusal(200, "x", "fs", "", ""))


def test_request_json_error_is_400() -> None:
    with pytest.raises(DoorRefused) as caught:
        Request("POST", "/", "/", body=b"{nope").json()
    assert caught.value.refusal.status == 400


@pytest.mark.parametrize("prefix_first", [True, False])
def test_the_first_matching_route_wins_whether_exact_or_prefix(prefix_first: bool) -> None:
    """An exact route is found by one lookup, unless an earlier '/*' route of its method matches its path."""
    exact, prefix = Route("GET", "/v0/fs/files/a", _ok), Route("GET", "/v0/fs/files/*", _ok)
    router = Router("fs", [prefix, exact] if prefix_first else [exact, prefix])
    assert router.match("GET", "/v0/fs/files/a").route is (prefix if prefix_first else exact)
    assert router.match("GET", "/v0/fs/files/b").route is prefix


def test_an_exact_route_of_another_method_does_not_hide_a_prefix_route() -> None:
    router = Router("fs", [Route("PUT", "/v0/fs/files/a", _ok), Route("GET", "/v0/fs/files/*", _ok)])
    assert router.match("GET", "/v0/fs/files/a").rest == "a"
    assert router.match("PUT", "/v0/fs/files/a").route.method == "PUT"
