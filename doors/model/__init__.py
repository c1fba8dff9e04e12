"""The model door: the Anthropic Messages API in front of the provider (or the built-in twin), the key out of
the app's reach and a budget it cannot overspend. README.md says what it accepts, does and emits.

For code outside doors/model (the bench, tests): the gateway the door serves, its config from the contract's
rows, and the plain-HTTP loop it serves a client's netns listener with.
"""

from doors.model._config import ModelConfig, config_from_rows
from doors.model._gateway import Gateway

__all__ = ["Gateway", "ModelConfig", "config_from_rows"]
