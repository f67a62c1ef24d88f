#!/usr/bin/env bash
# Bounded loopback load: 256 users at once, each on its own connection, sending /api/generate and
# /api/chat requests (streaming, stream:false, and streams abandoned after the first chunk).
# Every answer must be complete and well-formed, the server must still answer afterwards with no
# sequence running and no KV block in use, and its resident memory must stay flat between a
# warm-up round and the end of the load.
source "$(dirname "$0")/lib.sh"

CLIENTS=${VKLLM_LOAD_CLIENTS:-256}
SECONDS_OF_LOAD=${VKLLM_LOAD_SECONDS:-3}  # and at least 2 requests per client
RSS_MARGIN_MIB=${VKLLM_LOAD_RSS_MARGIN_MIB:-64}
tiny=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$VKLLM_PID/status"; }
load() {  # load CLIENTS MIN SECONDS: runs the client, fails on any error, prints its JSON summary
  local out
  out=$(node "$VKLLM_SOURCE_DIR/tests/integration/load_client.mjs" "$VKLLM_URL" tiny "$1" "$2" "$3")
  echo "$out"
  [ "$(jq .errors <<<"$out")" = 0 ] || fail "load with $1 clients: $(jq -c .first_errors <<<"$out")"
  [ "$(jq .requests <<<"$out")" -ge "$(($1 * $2))" ] || fail "fewer requests than clients: $out"
}
idle() {  # waits (at most 5 s) until the scheduler has let every sequence go
  local i
  for i in $(seq 1 50); do
    [ "$(metric vkllm_running_sequences)" = 0 ] && [ "$(metric vkllm_queued_requests)" = 0 ] &&
      [ "$(metric vkllm_kv_blocks 'state="used"')" = 0 ] && return 0
    sleep 0.1
  done
  fail "still busy after the load: running $(metric vkllm_running_sequences), queued" \
    "$(metric vkllm_queued_requests), KV blocks used $(metric vkllm_kv_blocks 'state="used"')"
}

vkllm_start load
d=sha256:$(sha256sum "$tiny" | cut -d' ' -f1)
curl -s -o /dev/null -X POST "$VKLLM_URL/api/blobs/$d" --data-binary "@$tiny"
req=$(jq -nc --arg d "$d" '{model:"tiny", files:{"m.gguf":$d}, template:"{{ .Prompt }}", stream:false}')
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create tiny: $(body)"

# Warm-up at full concurrency, so the memory sampled next already holds every pool, buffer and
# cache a round of 256 connections needs; what grows after that grows with the request count.
warm=$(load "$CLIENTS" 1 0)
idle
rss0=$(rss_kib)
t0=$(date +%s.%N)
main=$(load "$CLIENTS" 2 "$SECONDS_OF_LOAD")
t1=$(date +%s.%N)
idle
rss1=$(rss_kib)

echo "warm-up: $warm"
echo "load:    $main"
printf 'load: %d clients for %d s, done in %.1f s: %s requests, %s errors, %s abandoned mid-stream, %s tokens, p50 %s ms, p99 %s ms\n' \
  "$CLIENTS" "$SECONDS_OF_LOAD" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$(jq .requests <<<"$main")" "$(jq .errors <<<"$main")" \
  "$(jq .aborted <<<"$main")" "$(jq .tokens <<<"$main")" "$(jq .p50_ms <<<"$main")" "$(jq .p99_ms <<<"$main")"
echo "RSS after warm-up $((rss0 / 1024)) MiB, after load $((rss1 / 1024)) MiB (margin $RSS_MARGIN_MIB MiB)"
[ "$((rss1 - rss0))" -le "$((RSS_MARGIN_MIB * 1024))" ] ||
  fail "RSS grew by $(((rss1 - rss0) / 1024)) MiB under load"
[ "$(jq .aborted <<<"$main")" -gt 0 ] || fail "no stream was abandoned mid-way"
pass "$CLIENTS concurrent users: 0 errors, RSS $((rss0 / 1024)) -> $((rss1 / 1024)) MiB"

# Still serving, nothing held.
expect_eq "$(metric vkllm_running_sequences)" 0 "running sequences after the load"
expect_eq "$(metric vkllm_kv_blocks 'state="used"')" 0 "KV blocks in use after the load"
out=$(curl -s "$VKLLM_URL/api/generate" \
  -d '{"model":"tiny","prompt":"still there?","stream":false,"options":{"num_predict":4}}')
expect_eq "$(jq -r .done <<<"$out")" true "a request after the load: $out"
pass "the server answers after the load with no sequence running and no KV block in use"
