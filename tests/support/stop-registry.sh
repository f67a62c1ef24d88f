#!/usr/bin/env bash
# Stops a registry started by start-registry.sh DIR (and waits for it to exit).
set -uo pipefail
dir=${1:?usage: stop-registry.sh DIR}
[ -f "$dir/pid" ] || exit 0
pid=$(cat "$dir/pid")
kill "$pid" 2>/dev/null || exit 0
for _ in $(seq 1 100); do
  kill -0 "$pid" 2>/dev/null || exit 0
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
