"""The built-in twin of the Anthropic Messages API (`"upstream": "twin"`): deterministic, scripted, with faults.

`TwinUpstream` is the door's in-process upstream; `python -m doors.model.twin --listen HOST:PORT` serves the
same twin as plain HTTP (tests, the bench's direct baseline). README.md says what it answers and how.
"""

from doors.model.twin._errors import ERROR_TYPES, ApiError
from doors.model.twin._script import DEFAULT_MODELS, Block, Fault, Reply, Rule, TwinScript, TwinScriptError, When
from doors.model.twin._tokens import count_text, measure_prompt, split_tokens
from doors.model.twin._twin import Answer, Twin, TwinStatistics
from doors.model.twin._upstream import TWIN_NAME, TwinUpstream

__all__ = [
    "DEFAULT_MODELS",
    "ERROR_TYPES",
    "TWIN_NAME",
    "Answer",
    "ApiError",
    "Block",
    "Fault",
    "Reply",
    "Rule",
    "Twin",
    "TwinScript",
    "TwinScriptError",
    "TwinStatistics",
    "TwinUpstream",
    "When",
    "count_text",
    "measure_prompt",
    "split_tokens",
]
