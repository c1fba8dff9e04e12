"""The twin's token rule and its prompt cache, as tables."""

from __future__ import annotations

import itertools

import pytest

from doors.model._usage import Usage
from doors.model.twin import count_text, measure_prompt, split_tokens
from doors.model.twin._cache import PromptCache


@pytest.mark.parametrize(("text", "tokens"), [
    ("", []),
    ("a", ["a"]),
    ("abcd", ["abcd"]),
    ("abcde", ["abcd", "e"]),
    ("héllo", ["hél", "lo"]),  # é is 2 bytes: h+é+l is 4
    ("😀😀", ["😀", "😀"]),  # 4 bytes each
    ("a😀", ["a", "😀"]),  # a character is never split across tokens
    ("日本語", ["日", "本", "語"]),  # 3 bytes each: two never fit in 4
])
def test_split_tokens(text: str, tokens: list[str]) -> None:
    assert split_tokens(text) == tokens
    assert count_text(text) == len(tokens)
    assert "".join(tokens) == text


def _body(**fields: object) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": "abcdefgh"}], **fields}


@pytest.mark.parametrize(("body", "tokens"), [
    (_body(), 2),
    (_body(system="abcd"), 3),
    (_body(system=[{"type": "text", "text": "abcd"}, {"type": "text", "text": "ab"}]), 4),
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "abcd"}]},
                                 {"role": "assistant", "content": "abcdabcd"}]}, 3),
    # a non-text block counts its compact JSON, keys sorted: {"a":1,"type":"x"} is 18 bytes
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "x", "a": 1}]}]}, 5),
    # cache_control is not content
    ({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "x", "a": 1, "cache_control": {"type": "ephemeral"}}]}]}, 5),
])
def test_prompt_tokens(body: dict[str, object], tokens: int) -> None:
    assert measure_prompt(body).tokens == tokens


def _cached(text: str, ttl: str | None = None, tail: str = "") -> dict[str, object]:
    control: dict[str, str] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    blocks: list[dict[str, object]] = [{"type": "text", "text": text, "cache_control": control}]
    if tail:
        blocks.append({"type": "text", "text": tail})
    return {"model": "m", "system": blocks, "messages": [{"role": "user", "content": "abcd"}]}


def test_breakpoints_say_where_and_how_long() -> None:
    prompt = measure_prompt(_cached("a" * 40, "1h", tail="b" * 8))
    assert prompt.tokens == 10 + 2 + 1
    assert [(mark.tokens, mark.ttl) for mark in prompt.breakpoints] == [(10, "1h")]


def test_the_same_prefix_is_the_same_digest_and_another_model_is_not() -> None:
    one, two = measure_prompt(_cached("a" * 40)), measure_prompt(_cached("a" * 40, tail="zz"))
    other_model = measure_prompt({**_cached("a" * 40), "model": "n"})
    assert one.breakpoints[0].digest == two.breakpoints[0].digest
    assert one.breakpoints[0].digest != other_model.breakpoints[0].digest


@pytest.mark.parametrize(("first", "second", "usage"), [
    # nothing seen: the prefix up to the mark is written at its TTL, the rest is input
    (None, _cached("a" * 40), Usage(1, 10, 0, 0)),
    (None, _cached("a" * 40, "1h"), Usage(1, 0, 10, 0)),
    # seen: read
    (_cached("a" * 40), _cached("a" * 40), Usage(1, 0, 0, 10)),
    # seen with another TTL: the content is what is cached
    (_cached("a" * 40, "1h"), _cached("a" * 40), Usage(1, 0, 0, 10)),
    # another prefix: written again
    (_cached("a" * 40), _cached("b" * 40), Usage(1, 10, 0, 0)),
    # no cache_control: plain input
    (None, {"model": "m", "messages": [{"role": "user", "content": "abcd"}]}, Usage(1, 0, 0, 0)),
])
def test_cache_reads_what_it_saw(first: dict[str, object] | None, second: dict[str, object],
                                 usage: Usage) -> None:
    cache = PromptCache()
    if first is not None:
        cache.remember(measure_prompt(first))
    assert cache.input_usage(measure_prompt(second)) == usage


def test_two_breakpoints_read_the_first_and_write_the_stretch_after_it() -> None:
    first = {"model": "m", "system": [{"type": "text", "text": "a" * 40, "cache_control": {"type": "ephemeral"}}],
             "messages": [{"role": "user", "content": "abcd"}]}
    second = {"model": "m", "system": first["system"], "messages": [{"role": "user", "content": [
        {"type": "text", "text": "c" * 20, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "abcd"}]}]}
    cache = PromptCache()
    cache.remember(measure_prompt(first))
    assert cache.input_usage(measure_prompt(second)) == Usage(1, 0, 5, 10)


def test_the_cache_forgets_its_oldest_prefix_past_its_size() -> None:
    cache = PromptCache(max_prefixes=2)
    prompts = [measure_prompt(_cached(letter * 40)) for letter in "abc"]
    for prompt in prompts:
        cache.remember(prompt)
    assert cache.input_usage(prompts[0]).cache_read == 0
    assert cache.input_usage(prompts[2]).cache_read == 10


@pytest.mark.parametrize("text", ["abcdefghij" * 7, "mixed é and ascii " * 5, "😀a" * 9])
def test_the_ascii_fast_path_cuts_as_the_general_rule(text: str) -> None:
    pieces = split_tokens(text)
    assert all(len(piece.encode()) <= 4 for piece in pieces) and "".join(pieces) == text
    assert all(len(a.encode()) + len(b[0].encode()) > 4 for a, b in itertools.pairwise(pieces))
