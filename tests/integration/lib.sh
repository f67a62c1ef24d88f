# Shared helpers for integration tests (source it). Each test gets a temp dir with its own
# OLLAMA_MODELS; vkllm_start runs `vkllm serve` on a free loopback port (port 0, read back from
# the "Listening on" log line, so tests can run in parallel) and stops it when the script exits.
set -euo pipefail

: "${VKLLM_BIN:?VKLLM_BIN must point at the vkllm binary}"
VKLLM_SOURCE_DIR=${VKLLM_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VKLLM_SHARED_DIR=${VKLLM_SHARED_DIR:-$VKLLM_SOURCE_DIR/../shared}
export VKLLM_SOURCE_DIR VKLLM_SHARED_DIR

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/vkllm-it.XXXXXX")
VKLLM_PIDS=()
_vkllm_cleanup() {
  local pid
  for pid in "${VKLLM_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${VKLLM_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "${VKLLM_KEEP_TMP:-0}" = 1 ]; then echo "kept $TEST_TMP"; else rm -rf "$TEST_TMP"; fi
}
trap _vkllm_cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$TEST_TMP"/*.log; do
    [ -f "$log" ] && { echo "--- $log (tail)" >&2; tail -n 30 "$log" >&2; }
  done
  exit 1
}
pass() { echo "ok: $*"; }

# vkllm_start [NAME] [env assignments...]: starts a server with OLLAMA_MODELS=$TEST_TMP/NAME/models
# (default NAME "server"); sets VKLLM_URL, VKLLM_PORT, VKLLM_PID, OLLAMA_HOST (for CLI commands)
# and VKLLM_LOG. Extra arguments are environment assignments for that server only.
vkllm_start() {
  local name=${1:-server}
  shift || true
  mkdir -p "$TEST_TMP/$name/models"
  VKLLM_LOG=$TEST_TMP/$name.log
  : >"$VKLLM_LOG"  # a restart under the same name must not read the last run's port
  env OLLAMA_MODELS="$TEST_TMP/$name/models" OLLAMA_HOST=127.0.0.1:0 HOME="$TEST_TMP/$name" "$@" \
    "$VKLLM_BIN" serve >"$VKLLM_LOG" 2>&1 &
  VKLLM_PID=$!
  VKLLM_PIDS+=("$VKLLM_PID")
  local i
  for i in $(seq 1 300); do
    if VKLLM_PORT=$(grep -o 'Listening on [^ ]*' "$VKLLM_LOG" 2>/dev/null | sed 's/.*://'); then
      [ -n "$VKLLM_PORT" ] && break
    fi
    kill -0 "$VKLLM_PID" 2>/dev/null || fail "vkllm serve ($name) exited early"
    sleep 0.1
  done
  [ -n "${VKLLM_PORT:-}" ] || fail "vkllm serve ($name) did not report its port"
  VKLLM_URL=http://127.0.0.1:$VKLLM_PORT
  export OLLAMA_HOST=127.0.0.1:$VKLLM_PORT
  curl -sf "$VKLLM_URL/" >/dev/null || fail "vkllm serve ($name) not answering on $VKLLM_URL"
}

# vkllm_stop PID: SIGTERM and wait (graceful shutdown must finish within 15 s).
vkllm_stop() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  fail "vkllm (pid $pid) did not stop within 15 s of SIGTERM"
}

# http_status METHOD URL [curl args...]: prints the status code; the body goes to $TEST_TMP/body.
http_status() {
  local method=$1 url=$2
  shift 2
  if [ "$method" = HEAD ]; then  # -I: curl must not wait for the body HEAD never gets
    curl -s -o "$TEST_TMP/body" -w '%{http_code}' -I "$url" "$@"
  else
    curl -s -o "$TEST_TMP/body" -w '%{http_code}' -X "$method" "$url" "$@"
  fi
}
body() { cat "$TEST_TMP/body"; }

# expect_eq ACTUAL EXPECTED MESSAGE
expect_eq() {
  [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"
}

# eventually_eq WANT LABEL CMD [ARGS...]: runs CMD every 0.1 s (for at most 5 s) until it prints
# WANT, then expects it to, for what the server does just after it answers (unloads, cancels).
eventually_eq() {
  local want=$1 label=$2 got i
  shift 2
  for i in $(seq 1 50); do
    got=$("$@")
    [ "$got" = "$want" ] && break
    sleep 0.1
  done
  expect_eq "$got" "$want" "$label"
}

# node_client SCRIPT [args...]: runs a node script with tests/node_modules (npm clients).
node_client() {
  local modules=$VKLLM_SOURCE_DIR/tests/node_modules
  [ -d "$modules/ollama" ] || fail "npm clients missing: run scripts/setup (npm ci in tests/)"
  NODE_PATH=$modules node "$@"
}

# expect_vocab_vectors VECTORS MODEL: every single-line test vector of llama.cpp's VECTORS.inp /
# VECTORS.out (at least 20) tokenizes with `vkllm tokenize --model MODEL --no-bos` to exactly
# its ids (all in one `--lines` run). Prints how many matched.
expect_vocab_vectors() {
  local vectors=$1 model=$2 cases=$TEST_TMP/vocab-cases.jsonl count=0 case want got
  python3 - "$vectors" "$cases" <<'PY'
import json, sys
vectors, cases = sys.argv[1], sys.argv[2]
texts = open(vectors + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")[:-1]
ids = open(vectors + ".out", encoding="utf-8").read().split("\n")
n = 0
with open(cases, "w", encoding="utf-8") as f:
    for text, line in zip(texts, ids):
        if text and "\n" not in text and not text.startswith("-"):
            f.write(json.dumps({"text": text, "ids": [int(x) for x in line.split()]}) + "\n")
            n += 1
assert n >= 20, n
PY
  # One tokenizer load for every case: --lines gives one JSON object per input line.
  jq -r .text "$cases" >"$cases.txt"
  "$VKLLM_BIN" tokenize --model "$model" --no-bos --lines - <"$cases.txt" >"$cases.got"
  while IFS= read -r case && IFS= read -r got <&3; do
    want=$(jq -c '{ids: .ids}' <<<"$case")
    [ "$got" = "$want" ] || fail "tokenize '$(jq -r .text <<<"$case")': got $got, want $want"
    count=$((count + 1))
  done <"$cases" 3<"$cases.got"
  [ "$count" -eq "$(wc -l <"$cases")" ] || fail "tokenize --lines gave $(wc -l <"$cases.got") lines"
  echo "$count"
}

# metric NAME [LABEL-FILTER]: the sum of the /metrics series NAME whose labels match the filter.
metric() {
  curl -s "$VKLLM_URL/metrics" | grep "^$1" | grep -- "${2:-}" | awk '{s+=$2} END {print s+0}'
}

# upload_blob FILE: uploads FILE through /api/blobs (201 created, 200 already there) and prints
# its digest; any other status fails the test (set -e ends the script from d=$(upload_blob F)).
upload_blob() {
  local digest st
  digest=sha256:$(sha256sum "$1" | cut -d' ' -f1)
  st=$(http_status POST "$VKLLM_URL/api/blobs/$digest" --data-binary "@$1")
  [ "$st" = 201 ] || [ "$st" = 200 ] || fail "blob upload $1: $st $(body)"
  echo "$digest"
}

# create_model NAME TEMPLATE [GGUF]: uploads GGUF (the tiny llama fixture unless given) through
# /api/blobs and creates NAME from it with TEMPLATE through /api/create.
create_model() {
  local gguf=${3:-$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf} digest req
  digest=$(upload_blob "$gguf")
  req=$(jq -nc --arg m "$1" --arg d "$digest" --arg t "$2" \
    '{model:$m, files:{"tiny.gguf":$d}, template:$t, stream:false}')
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create $1: $(body)"
}
