#!/usr/bin/env bash
# Starts `slimkv serve` on a free port with an API key, runs the official openai npm client against it, stops it.
# Usage: tests/openai_client/run.sh PATH/TO/slimkv   (node_modules must be installed: scripts/test does it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"
model="$here/../../../shared/models/stories260K/stories260K.bin"
if [ ! -d "$here/node_modules/openai" ]; then
  echo "run.sh: $here/node_modules/openai is missing: run 'npm ci' there (scripts/test does)" >&2
  exit 1
fi
log="$(mktemp)"
"$bin" serve -m "$model" --port 0 --threads 1 --kv-cache-memory 0.02 --api-key sk-test >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
  port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
  if [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
  kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
node "$here/client_test.mjs" "http://127.0.0.1:$port" sk-test
