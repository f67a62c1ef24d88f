#!/usr/bin/env bash
# OLLAMA_KV_CACHE_TYPE: an unknown value stops the server at startup naming the accepted ones;
# with q8_0 the memorising tolstoy model (real weights) continues a line of the novel with the same
# greedy text as with the default f16 cache, and /api/ps reports the smaller cache.
source "$(dirname "$0")/lib.sh"

OLLAMA_MODELS=$TEST_TMP/bad OLLAMA_HOST=127.0.0.1:0 HOME=$TEST_TMP OLLAMA_KV_CACHE_TYPE=q3_k \
  timeout 20 "$VKLLM_BIN" serve >"$TEST_TMP/bad.out" 2>&1 && fail "serve started with q3_k"
grep -q "OLLAMA_KV_CACHE_TYPE=q3_k: expected f16, q8_0 or q4_0" "$TEST_TMP/bad.out" ||
  fail "no clear startup error: $(cat "$TEST_TMP/bad.out")"
pass "an unknown OLLAMA_KV_CACHE_TYPE is a startup error"

gguf=$VKLLM_SHARED_DIR/testdata/models/tolstoy-mem-q4_k_m.gguf
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" >"$TEST_TMP/Modelfile"
prompt='It was in July, 1805, and the speaker was the well-known Anna Pavlovna'
greq=$(jq -nc --arg p "$prompt" '{model:"tolstoy",prompt:$p,stream:false,raw:true,
  options:{temperature:0,num_predict:32}}')
# run TYPE: serves with that cache type (one store for both), greedy text to TYPE.txt and the
# model's /api/ps size to TYPE.size.
run() {
  vkllm_start server OLLAMA_KV_CACHE_TYPE="$1"
  if [ "$1" = f16 ]; then
    "$VKLLM_BIN" create tolstoy -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create tolstoy"
  fi
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$greq")" 200 "generate ($1): $(body)"
  jq -j .response "$TEST_TMP/body" >"$TEST_TMP/$1.txt"
  curl -s "$VKLLM_URL/api/ps" | jq -r '.models[0].size' >"$TEST_TMP/$1.size"
  vkllm_stop "$VKLLM_PID"
}
run f16
run q8_0
grep -q 'Scherer, maid of honor' "$TEST_TMP/f16.txt" || fail "f16 did not recite: $(cat "$TEST_TMP/f16.txt")"
cmp -s "$TEST_TMP/f16.txt" "$TEST_TMP/q8_0.txt" ||
  fail "q8_0 text differs: '$(cat "$TEST_TMP/q8_0.txt")' vs f16 '$(cat "$TEST_TMP/f16.txt")'"
f16=$(cat "$TEST_TMP/f16.size") q8=$(cat "$TEST_TMP/q8_0.size")
[ "$q8" -lt "$f16" ] || fail "/api/ps size with q8_0 ($q8) not below f16's ($f16)"
pass "q8_0 cache: the same greedy text; /api/ps size $q8 bytes (f16: $f16)"
