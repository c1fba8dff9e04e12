"""The environment variables unmodified clients honour, that the launcher and the shell door set for them."""

from __future__ import annotations

# Both spellings: tools read one or the other (curl the lowercase ones, most SDKs either).
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# Clients send even 127.0.0.1 through HTTP_PROXY unless NO_PROXY lists it (measured: the anthropic SDK, Claude Code).
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
# Where the official SDKs and agent CLIs find their model (the model door's plain-HTTP listener) and key.
MODEL_VARIABLES = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
# The shell door gives each command its own proxy URL, `http://cmd-<id>@127.0.0.1:3128`; clients send the user as
# Proxy-Authorization, and the net door writes the id into its events (docs/decisions/net.md, "Command label").
COMMAND_PROXY_USER_PREFIX = "cmd-"
# Where unmodified clients look for the CA bundle they trust (OpenSSL and Python's ssl, requests, curl, Node, git):
# the launcher points them at the system store plus the egress CA, only when a host has a bound credential.
TRUST_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")
