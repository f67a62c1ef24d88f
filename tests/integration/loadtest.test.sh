#!/usr/bin/env bash
# Loopback load (issue 14 item 13): 500 keep-alive clients over /api/tags, /api/show and
# /api/version while slowloris connections trickle headers. Zero errors, slowloris connections
# cut off by the header timeout, memory flat between two equal rounds; p99 printed.
source "$(dirname "$0")/lib.sh"

: "${VKLLM_HTTP_LOAD:?VKLLM_HTTP_LOAD must point at bench/vkllm_http_load (built with VKLLM_BUILD_BENCH=ON)}"
gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
gguf_digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)

vkllm_start
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$gguf_digest" --data-binary "@$gguf")" 201 "upload GGUF"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"tiny\",\"files\":{\"t.gguf\":\"$gguf_digest\"},\"stream\":false}")" 200 "create tiny"
for i in $(seq 1 9); do
  expect_eq "$(http_status POST "$VKLLM_URL/api/copy" -d "{\"source\":\"tiny\",\"destination\":\"tiny$i\"}")" 200 "copy $i"
done

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$VKLLM_PID/status"; }
round() {  # seconds slowloris
  "$VKLLM_HTTP_LOAD" --port "$VKLLM_PORT" --connections 500 --seconds "$1" --slowloris "$2" \
    --request "GET /api/tags" --request 'POST /api/show {"model":"tiny"}' \
    --request "GET /api/version" | tee "$TEST_TMP/load.out"
}
round 4 0 || fail "warm-up round had errors"
rss1=$(rss_kb)
round 15 40 || fail "load round had errors: $(cat "$TEST_TMP/load.out")"
grep -q ' errors=0 ' "$TEST_TMP/load.out" || fail "errors: $(cat "$TEST_TMP/load.out")"
closed=$(sed -n 's/.*slowloris_closed=\([0-9]*\).*/\1/p' "$TEST_TMP/load.out")
[ "${closed:-0}" -gt 0 ] || fail "slowloris connections were never cut off"
round 4 0 || fail "third round had errors"
rss2=$(rss_kb)
echo "RSS after warm-up ${rss1} kB, after the load ${rss2} kB"
[ "$rss2" -lt $((rss1 + rss1 / 4 + 32768)) ] || fail "RSS grew from ${rss1} kB to ${rss2} kB"
expect_eq "$(http_status GET "$VKLLM_URL/api/version")" 200 "server alive after the load"
pass "500 connections + slowloris: 0 errors, RSS flat"
