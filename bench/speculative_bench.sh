#!/usr/bin/env bash
# Decode speed without speculation, with prompt lookup (VKLLM_SPECULATIVE=ngram) and with a draft
# model (Modelfile DRAFT), through the real server: tolstoy-mem (../shared/testdata/models)
# recites a passage, then is asked to recite it again with the passage quoted in the prompt, so
# n-gram lookup finds the continuation. Prints per mode: generated tokens, decode tok/s (Ollama's
# eval_count / eval_duration, best of RUNS) and the drafted / accepted counts from /metrics, for
# the quoting requests and for the recital without the quote (little for lookup to find: the
# acceptance gate's case; the draft model's own case). The draft is tolstoy-gen unless DRAFT
# names another GGUF of the same vocabulary (a smaller one trained with ../shared/tools/train_tiny.py).
#
#   bench/speculative_bench.sh [VKLLM_BIN] [GEN] [RUNS]   (env passes through: VKLLM_DEVICE,
#   VKLLM_THREADS, VKLLM_DRAFT_MAX; DRAFT_NUM_PREDICT sets the request option)
set -euo pipefail
bin=${1:-build/server/vkllm}
gen=${2:-128}
runs=${3:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
gguf=${TOLSTOY_MEM:-$here/../shared/testdata/models/tolstoy-mem-q4_k_m.gguf}
draft=${DRAFT:-$here/../shared/testdata/models/tolstoy-gen-q8_0.gguf}
draft_num_predict=${DRAFT_NUM_PREDICT:-4}
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" >"$tmp/Modelfile"
printf 'FROM %s\nDRAFT %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" "$draft" >"$tmp/Modelfile.draft"
opening='It was in July, 1805, and the speaker was the well-known Anna Pavlovna'
request() {
  jq -nc --arg p "$1" --argjson n "$2" '{model:"tolstoy",prompt:$p,stream:false,raw:true,
    options:{temperature:0,num_predict:$n,draft_num_predict:'"$draft_num_predict"'}}'
}
for mode in off ngram draft; do
  rm -rf "$tmp/models"
  modelfile=$tmp/Modelfile spec=$mode
  [ "$mode" = draft ] && modelfile=$tmp/Modelfile.draft spec=auto
  OLLAMA_MODELS=$tmp/models OLLAMA_HOST=127.0.0.1:0 HOME=$tmp VKLLM_SPECULATIVE=$spec \
    "$bin" serve >"$tmp/log" 2>&1 &
  pid=$!
  port=
  for _ in $(seq 1 300); do
    port=$(grep -o 'Listening on [^ ]*' "$tmp/log" | sed 's/.*://') && [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "vkllm serve did not start: $(cat "$tmp/log")" >&2; exit 1; }
  url=http://127.0.0.1:$port
  OLLAMA_HOST=127.0.0.1:$port "$bin" create tolstoy -f "$modelfile" >"$tmp/create.log" 2>&1 ||
    { echo "create failed: $(cat "$tmp/create.log")" >&2; exit 1; }
  passage=$(curl -s "$url/api/generate" -d "$(request "$opening" "$gen")" | jq -j .response)
  # The same passage without the quote: little for prompt lookup to find.
  request "$opening" "$gen" >"$tmp/plain.json"
  counts() {
    curl -s "$url/metrics" | awk '/^vkllm_speculative_drafted_tokens_total/ {d += $2}
      /^vkllm_speculative_accepted_tokens_total/ {a += $2} END {print d + 0, a + 0}'
  }
  read -r pdrafted0 paccepted0 < <(counts)
  plain=0
  for _ in $(seq 1 "$runs"); do
    read -r count ns < <(curl -s "$url/api/generate" -d @"$tmp/plain.json" |
      jq -r '"\(.eval_count) \(.eval_duration)"')
    plain=$(awk -v b="$plain" -v c="$count" -v ns="$ns" 'BEGIN {t = c / (ns / 1e9); print (t > b ? t : b)}')
  done
  read -r drafted0 accepted0 < <(counts)
  pdrafted=$((drafted0 - pdrafted0)) paccepted=$((accepted0 - paccepted0))
  request "$opening$passage $opening" "$gen" >"$tmp/quote.json"
  best=0 count=0
  for _ in $(seq 1 "$runs"); do
    read -r count ns < <(curl -s "$url/api/generate" -d @"$tmp/quote.json" |
      jq -r '"\(.eval_count) \(.eval_duration)"')
    best=$(awk -v b="$best" -v c="$count" -v ns="$ns" 'BEGIN {t = c / (ns / 1e9); print (t > b ? t : b)}')
  done
  read -r drafted accepted < <(counts)
  drafted=$((drafted - drafted0)) accepted=$((accepted - accepted0))
  printf '%-6s quoted: %4s tokens, decode %7.1f tok/s, drafted %5s accepted %5s | unquoted: %7.1f tok/s, drafted %5s accepted %5s\n' \
    "$mode" "$count" "$best" "$drafted" "$accepted" "$plain" "$pdrafted" "$paccepted"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
done
