"""JSON pointers (RFC 6901) and the shape of ManifestError."""

from __future__ import annotations

from launcher.manifest import ManifestError
from launcher.manifest._errors import child, describe_pointer, escape_token, pointer


def test_rfc6901_escaping() -> None:
    assert escape_token("a/b") == "a~1b"
    assert escape_token("m~n") == "m~0n"
    assert escape_token("~1") == "~01"  # '~' first, so '~1' in a key is not read back as '/'
    assert pointer([]) == ""
    assert pointer(["foo", 0]) == "/foo/0"
    assert pointer([""]) == "/"
    assert pointer(["a/b", "c%d", "m~n", " "]) == "/a~1b/c%d/m~0n/ "
    assert child("/doors/net/allow", "app") == "/doors/net/allow/app"


def test_error_carries_pointer_message_and_hint() -> None:
    error = ManifestError("/session/ttl_s", "59 is below the minimum 60", "use 60..86400")
    assert error.pointer == "/session/ttl_s"
    assert (error.message, error.hint) == ("59 is below the minimum 60", "use 60..86400")
    assert str(error) == "/session/ttl_s: 59 is below the minimum 60"
    assert error.as_dict() == {"error": "bad_manifest", "pointer": "/session/ttl_s",
                               "message": "59 is below the minimum 60", "hint": "use 60..86400"}
    assert isinstance(error, ValueError)
    assert describe_pointer("") == "(document root)"
