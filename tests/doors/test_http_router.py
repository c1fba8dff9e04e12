"""The router and the error shape (pure)."""

from __future__ import annotations

import json

import pytest

from doors._http import HttpError, Request, Response, Route, Router, error_response, json_response


async def _ok(request: Request) -> Response:
    return json_response({"rest": request.rest})


def test_exact_route_matches_method_and_path() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    assert router.match("GET", "/v0/hello").route.path == "/v0/hello"


def test_unknown_path_is_404_naming_the_door() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(HttpError) as caught:
        router.match("GET", "/v0/nope")
    assert (caught.value.status, caught.value.who, caught.value.error) == (404, "fs", "http.route")


def test_wrong_method_is_405_naming_the_allowed_ones() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(HttpError) as caught:
        router.match("POST", "/v0/hello")
    assert caught.value.status == 405
    assert "GET" in caught.value.hint


def test_prefix_route_hands_the_rest_of_the_path() -> None:
    router = Router("fs", [Route("PUT", "/v0/fs/files/*", _ok)])
    assert router.match("PUT", "/v0/fs/files/a/b.txt").rest == "a/b.txt"
    with pytest.raises(HttpError):
        router.match("PUT", "/v0/fs/files/")


def test_a_duplicate_route_is_refused() -> None:
    router = Router("fs", [Route("GET", "/v0/hello", _ok)])
    with pytest.raises(ValueError, match="already defined"):
        router.add(Route("GET", "/v0/hello", _ok))


def test_error_shape_has_the_four_keys() -> None:
    response = error_response(409, "fs.append_only", "fs", {"path": "log"}, "append instead")
    assert response.status == 409
    assert isinstance(response.body, bytes)
    assert json.loads(response.body) == {
        "error": "fs.append_only", "who": "fs", "detail": {"path": "log"}, "hint": "append instead"}
    assert response.header("Content-Type") == "application/json"


def test_error_shape_covers_507_for_a_spent_quota() -> None:
    response = error_response(507, "max_total_bytes", "fs", "the session wrote 10 bytes", "raise the row")
    assert response.status == 507
    assert isinstance(response.body, bytes)
    assert json.loads(response.body)["error"] == "max_total_bytes"


def test_error_shape_refuses_a_success_status() -> None:
    with pytest.raises(ValueError):
        error_response(200, "x", "fs", "", "")


def test_request_json_error_is_400() -> None:
    with pytest.raises(HttpError) as caught:
        Request("POST", "/", "/", body=b"{nope").json()
    assert caught.value.status == 400
