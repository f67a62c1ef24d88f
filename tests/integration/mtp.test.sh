#!/usr/bin/env bash
# Multi-token prediction, as a new user meets it: a Qwen3.5 GGUF as llama.cpp's converter writes
# it (make-model --mtp: the NextN block after the decoder's layers) is created and chats; the
# server says the block drafts, /metrics counts the drafted tokens (draft="model"), and the greedy
# answers, alone and as 3 concurrent requests, are the text VKLLM_SPECULATIVE=off gives.
source "$(dirname "$0")/lib.sh"

vocab=$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf
"$VKLLM_BIN" dev make-model --arch qwen35 --shape test --mtp --vocab "$vocab" --seed 7 \
  -o "$TEST_TMP/qwen35-mtp.gguf" >/dev/null || fail "make-model --mtp"
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$TEST_TMP/qwen35-mtp.gguf" >"$TEST_TMP/Modelfile"
q='{"model":"q","prompt":"The quick brown fox jumps over the lazy dog","raw":true,"stream":false,"options":{"temperature":0,"num_predict":24}}'
# run MODE: the greedy answer to MODE.txt, three concurrent ones to MODE.N.txt, the drafted
# token count to MODE.drafted.
run() {
  vkllm_start "$1" VKLLM_SPECULATIVE="$1"
  "$VKLLM_BIN" create q -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create ($1)"
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$q")" 200 "generate ($1): $(body)"
  jq -j .response "$TEST_TMP/body" >"$TEST_TMP/$1.txt"
  local i pids=()
  for i in 1 2 3; do
    curl -s "$VKLLM_URL/api/generate" -d "$q" | jq -j .response >"$TEST_TMP/$1.$i.txt" &
    pids+=($!)
  done
  wait "${pids[@]}"
  (metric vkllm_speculative_drafted_tokens_total 'draft="model"' || true) >"$TEST_TMP/$1.drafted"
  vkllm_stop "$VKLLM_PID"
}
run auto
run off
grep -q "multi-token-prediction block drafts" "$TEST_TMP/auto.log" ||
  fail "the server does not say the block drafts: $(grep -i loaded "$TEST_TMP/auto.log")"
grep -q "multi-token-prediction" "$TEST_TMP/off.log" && fail "the block drafts with speculation off"
[ -s "$TEST_TMP/off.txt" ] || fail "empty answer"
for f in auto auto.1 auto.2 auto.3; do
  cmp -s "$TEST_TMP/off.txt" "$TEST_TMP/$f.txt" ||
    fail "$f differs: '$(cat "$TEST_TMP/$f.txt")' vs '$(cat "$TEST_TMP/off.txt")'"
done
drafted=$(cat "$TEST_TMP/auto.drafted")
[ "${drafted%.*}" -gt 0 ] || fail "/metrics: $drafted tokens drafted by the block"
expect_eq "$(cat "$TEST_TMP/off.drafted")" 0 "drafted tokens with VKLLM_SPECULATIVE=off"
pass "a Qwen3.5 file with its NextN block: the block drafted $drafted tokens; the same greedy text as without"
