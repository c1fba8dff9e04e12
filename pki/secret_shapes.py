"""What a secret's value looks like: the token and key shapes that never enter an audit line or a command's
environment. Pure, and in pki so that the launcher (its audit guard, launcher/policy/audit_guard.py) and the
doors (the shell door's env check) use one definition: a door never imports the launcher.
"""

from __future__ import annotations

import re

# A token starts where no letter or digit comes before it: `backup_ghp_…` and `x-sk-ant-…` are found, while
# `risk-assessment-…` is not an OpenAI key. (`\b` would miss the first two: `_` is a word character.)
_START = "(?<![A-Za-z0-9])"
# rule → what is replaced. The rule is what a placeholder names: a PEM private key, an Anthropic, OpenAI or
# Google API key, an AWS access key id, a GitHub, Slack or Stripe live token, a JSON web token, a bearer
# credential, a password in a URL.
SECRET_VALUE_RULES = {
    # the header through its END line (or to the end of the text when cut short): the body is the key
    "pem": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)",
    "anthropic": r"sk-ant-[A-Za-z0-9_-]{16,}",
    "openai": r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}",
    "aws": r"(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "github": r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    "slack": r"xox[abprs]-[A-Za-z0-9-]{10,}",
    "google": r"AIza[0-9A-Za-z_-]{35}",
    "stripe": r"[rs]k_live_[0-9A-Za-z]{20,}",
    "jwt": r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer": r"(?i:bearer)\s+[A-Za-z0-9._~+/=-]{16,}",
    # a scheme is short: bounded, so `a.a.a.…` (each letter a start) costs linear, not quadratic, time
    "url_password": r"[a-z][a-z0-9+.-]{0,31}://[^/\s:@]+:[^/\s@]+@",
}
# One alternation: a single scan per string, whatever the number of patterns; a PEM header starts anywhere.
# A JWT starts where no base64url character precedes it: its segments may be long, and a start inside
# another's run (`-eyJ-eyJ…`) would rescan that run from each start (quadratic time on a 64 KiB value).
_STARTS = {"pem": "", "jwt": "(?<![A-Za-z0-9_-])"}
SECRET_VALUE = re.compile("|".join(f"(?P<{rule}>{_STARTS.get(rule, _START)}{pattern})"
                                    for rule, pattern in SECRET_VALUE_RULES.items()), re.DOTALL)


def secret_shape(text: str) -> str | None:
    """The rule of the first secret-shaped substring of `text` (`github`, `jwt`, `pem`, ...), or None."""
    found = SECRET_VALUE.search(text)
    return None if found is None else str(found.lastgroup)
