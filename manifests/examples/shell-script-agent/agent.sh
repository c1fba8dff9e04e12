#!/bin/sh
# A shell-script agent: asks the model with curl, applies its answer with plain shell redirections, runs the
# tests as its own child. Under sharness-launch: ANTHROPIC_BASE_URL is the model door (plain HTTP, only in the
# app's network namespace), the workspace is the fs door's mount, and `make test` inherits every lock.
set -eu
cd "$1"
request=$(printf '{"model": "%s", "max_tokens": 1024, "messages": [{"role": "user", "content": "%s"}]}' \
  "${ANTHROPIC_MODEL:-claude-sonnet-4-5}" "Reply with the new content of NOTES.md for: $2")
curl -sS --fail-with-body "$ANTHROPIC_BASE_URL/v1/messages" \
  -H "x-api-key: $ANTHROPIC_API_KEY" -H "anthropic-version: 2023-06-01" -H "content-type: application/json" \
  -d "$request" > "$TMPDIR/reply.json"
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["content"][0]["text"])' "$TMPDIR/reply.json" \
  > NOTES.md
make test
