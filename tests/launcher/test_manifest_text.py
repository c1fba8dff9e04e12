"""launcher/manifest/_text.py: every manifest string, keys and values, is one a person can read for what it is."""

from __future__ import annotations

from typing import Any

import pytest
from manifests.samples import FULL, load, sample

from launcher.manifest import ManifestError

FS = FULL["doors"]["fs"]
APP = FULL["app"]


def _argv(*args: str) -> dict[str, Any]:
    return sample(app__argv=list(args))


CASES = [
    (sample(workspace="/srv/ws-\u202egnp.sh"), "/workspace", "U+202E"),
    (sample(app__files={"read": ["/opt/\u2067agent"], "exec": []}), "/app/files/read/0", "U+2067"),
    (sample(doors__fs={**FS, "read_only": [".git\u200b"]}), "/doors/fs/read_only/0", "U+200B"),
    (sample(doors__fs={**FS, "hidden": [".e\ufeffnv"]}), "/doors/fs/hidden/0", "U+FEFF"),
    (sample(session__name="t\u0085"), "/session/name", "U+0085"),
    (sample(doors__model__upstream="https://api.anthropic.com\u2028"), "/doors/model/upstream", "U+2028"),
    (_argv("/opt/agent/bin/agent", "\x1b]0;title\x07"), "/app/argv/1", "U+001B"),
    (_argv("/opt/agent/bin/agent", "ok\rbad"), "/app/argv/1", "U+000D"),
    (_argv("/opt/agent/bin/a\tgent"), "/app/argv/0", "U+0009"),
    (_argv("/opt/agent/bin/agent", "\ue000"), "/app/argv/1", "U+E000"),
    (_argv("/opt/agent/bin/agent", "\u0378"), "/app/argv/1", "U+0378"),
    (sample(doors__keys__secrets={"anthr\u202eopic": FULL["doors"]["keys"]["secrets"]["anthropic"]}),
     "/doors/keys/secrets", "U+202E"),
    ({**FULL, "\u200bworkspace": "/x"}, "", "U+200B"),
]


@pytest.mark.parametrize(("document", "pointer", "code"), CASES)
def test_unreadable_strings_are_refused_with_pointer_and_code_point(document: Any, pointer: str, code: str) -> None:
    with pytest.raises(ManifestError) as refused:
        load(document)
    error = refused.value
    assert error.pointer == pointer
    assert code in error.message and code in error.hint
    # Nothing a person is shown carries the character itself: the string is quoted escaped.
    assert f"\\u{{{code[2:]}}}" in error.message
    assert all(char.isprintable() for char in str(error) + error.hint)


def test_tab_and_newline_are_allowed_in_arguments_after_the_program() -> None:
    manifest = load(_argv("/bin/sh", "-c", "echo one\n\techo two"))
    assert manifest.app.argv[2] == "echo one\n\techo two"


def test_a_bad_key_is_named_at_the_object_that_holds_it() -> None:
    with pytest.raises(ManifestError) as refused:
        load(sample(doors__fs={**FS, "read_only\u202e": []}))
    assert refused.value.pointer == "/doors/fs"
    assert "read_only\\u{202E}" in refused.value.message


def test_the_string_check_runs_before_the_schema_would_quote_the_value() -> None:
    # The schema refuses an unknown door by quoting its key; the string check comes first.
    with pytest.raises(ManifestError) as refused:
        load(sample(doors__fs={**FS, "hidden": [".env"]}, doors__printer={"x": "\u202e"}))
    assert refused.value.pointer == "/doors/printer/x"
