"""JSON Schema 2020-12 validation against manifests/schema.json, turned into one ManifestError.

Two validators of the same schema: jsonschema-rs (compiled) decides every manifest; a manifest it refuses is
worded by jsonschema's `best_match`, which is imported only then (its import alone was 40-80 ms of every
launcher's start, the largest single one: docs/decisions/bench.md, "readyquick"). Should the two ever disagree,
the refusal stands: a manifest is accepted only when the compiled validator accepts it
(tests/launcher/test_manifest_schema_twins.py runs both on every vector and on mutations of the examples).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launcher.manifest._errors import ManifestError, child, pointer

if TYPE_CHECKING:
    import jsonschema_rs
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

# A symlink to manifests/schema.json (the authority), so the installed package carries it too.
SCHEMA_PATH = Path(__file__).with_name("schema.json")
# A value quoted in a refusal is cut to this many characters, ending in ELLIPSIS.
SHOWN_CHARS = 80
ELLIPSIS = "..."


# The schema itself is checked against the 2020-12 metaschema by the suite (tests/launcher/test_manifest_schema.py),
# not on every run: that check alone was 30-60 ms of each launcher's start.
@functools.cache
def _deciding_validator() -> jsonschema_rs.Draft202012Validator:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(schema())


@functools.cache
def _validator() -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


def schema() -> dict[str, Any]:
    """The manifest schema as a mapping (a copy)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(document: Any) -> None:
    """Raise ManifestError for the most relevant schema violation in `document`, if any."""
    deciding = _deciding_validator()
    if deciding.is_valid(document):
        return
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(document))
    if error is not None:
        raise _to_manifest_error(error)
    # Only the compiled validator refuses: its refusal stands (fail closed), in its own words.
    first = next(iter(deciding.iter_errors(document)))
    raise ManifestError(pointer(first.instance_path), _cut(first.message), "see manifests/schema.json")


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - len(ELLIPSIS)] + ELLIPSIS


def _to_manifest_error(error: ValidationError) -> ManifestError:
    where = pointer(error.absolute_path)
    kind = str(error.validator)
    value = error.validator_value
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))[0]
        return ManifestError(child(where, extra), f"unknown key {extra!r}",
                             "allowed here: " + (", ".join(allowed) if allowed else "nothing"))
    if kind == "required":
        missing = next(name for name in value if name not in error.instance)
        return ManifestError(child(where, missing), f"required key {missing!r} is missing",
                             f"add {missing!r} (see manifests/schema.json)")
    if "propertyNames" in error.absolute_schema_path:
        # jsonschema reports a bad key at its object, with the key itself as the instance.
        return ManifestError(child(where, error.instance), f"key {error.instance!r} is not allowed here",
                             _expectation(error.schema))
    if kind == "type":
        return ManifestError(where, f"expected {_type_words(value)}, found {_kind(error.instance)}",
                             _type_hint(value, error.instance))
    return ManifestError(where, _message(kind, value, error.instance), _hint(kind, value, error.schema))


def _message(kind: str, value: Any, instance: Any) -> str:
    shown = _cut(json.dumps(instance, ensure_ascii=False))
    if kind == "const":
        return f"{shown} is not {json.dumps(value)}"
    if kind == "enum":
        return f"{shown} is not one of {', '.join(json.dumps(v) for v in value)}"
    templates = {
        "minimum": "{shown} is below the minimum {value}",
        "maximum": "{shown} is above the maximum {value}",
        "pattern": "{shown} is not in the expected form",
        "minItems": "needs at least {value} item(s)",
        "maxItems": "holds more than {value} items",
        "minLength": "needs at least {value} character(s)",
        "maxLength": "is longer than {value} characters",
        "uniqueItems": "holds the same item twice",
        "maxProperties": "holds more than {value} members",
    }
    template = templates.get(kind, "fails the schema's {kind!r} rule")
    return template.format(shown=shown, value=value, kind=kind)


def _hint(kind: str, value: Any, subschema: Any) -> str:
    if kind == "minItems":
        return f"list at least {value} item(s)"
    if kind == "maxItems":
        return f"list at most {value} items"
    if kind == "maxLength":
        return f"shorten it to at most {value} characters"
    if kind == "minLength":
        return "write a non-empty value"
    if kind == "maxProperties":
        return f"keep at most {value} members"
    return _expectation(subschema)


def _expectation(subschema: Any) -> str:
    if not isinstance(subschema, dict):
        return "see manifests/schema.json"
    if "description" in subschema:
        return "expected " + str(subschema["description"])
    if "const" in subschema:
        return f"write {json.dumps(subschema['const'])}"
    if "enum" in subschema:
        return "use one of " + ", ".join(json.dumps(v) for v in subschema["enum"])
    if "minimum" in subschema or "maximum" in subschema:
        return f"use an integer from {subschema.get('minimum', '-')} to {subschema.get('maximum', '-')}"
    if "uniqueItems" in subschema:
        return "list each item once"
    return "see manifests/schema.json"


_TYPE_WORDS = {"object": "an object", "array": "a list", "integer": "an integer",
               "string": "a string", "boolean": "true or false"}


def _type_words(value: Any) -> str:
    names = [str(name) for name in (value if isinstance(value, list) else [value])]
    return " or ".join(_TYPE_WORDS.get(name, name) for name in names)


def _kind(instance: Any) -> str:
    if isinstance(instance, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", int: "an integer", str: "a string",
            type(None): "null"}.get(type(instance), type(instance).__name__)


def _type_hint(expected: Any, instance: Any) -> str:
    if expected == "integer" and isinstance(instance, bool):
        return "write a number: true and false are not integers here"
    return f"write {_type_words(expected)} here"
