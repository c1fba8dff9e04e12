"""A secret's name: one pattern, the schema's, the manifest checks', the sealed store's and the keys door's."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from doors._refusal import DoorRefused
from doors.keys._request import parse_ask
from doors.keys._seal import PUBLIC_KEY_BYTES
from pki.vocabulary import SECRET_NAME_PATTERN, valid_secret_name

SCHEMA = Path(__file__).resolve().parents[3] / "manifests" / "schema.json"
NAMES = [("anthropic", True), ("gh.token-1", True), ("0day", True), ("a_b", True), ("a" * 64, True),
         ("a" * 65, False), ("", False), (".hidden", False), ("-x", False), ("Upper", False), ("a/b", False),
         ("a\n", False), ("a b", False), ("²", False), (None, False)]


def test_the_schema_anchors_the_vocabularys_pattern() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["secret_name"]["pattern"] == f"^{SECRET_NAME_PATTERN}$"


@pytest.mark.parametrize(("name", "ok"), NAMES)
def test_valid_secret_name(name: object, ok: bool) -> None:
    assert valid_secret_name(name) is ok


@pytest.mark.parametrize(("name", "ok"), [(n, ok) for n, ok in NAMES if isinstance(n, str)])
def test_the_keys_door_asks_for_exactly_the_names_a_manifest_can_keep(name: str, ok: bool) -> None:
    body = {"name": name, "host": "api.anthropic.com", "request_id": "r" * 16, "issued_at": 1,
            "public_key": base64.b64encode(b"\0" * PUBLIC_KEY_BYTES).decode()}
    if ok:
        assert parse_ask(body, "model", "spiffe://t/model")[0].name == name
    else:
        with pytest.raises(DoorRefused):
            parse_ask(body, "model", "spiffe://t/model")
