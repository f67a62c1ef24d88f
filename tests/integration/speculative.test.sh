#!/usr/bin/env bash
# VKLLM_SPECULATIVE: an unknown value stops the server at startup naming the accepted ones. With
# prompt lookup on (the default), the memorising tolstoy model (real weights) asked to recite a
# passage its prompt quotes answers with the same greedy text as with speculation off, alone and
# as 4 concurrent requests, and /metrics shows drafted tokens, most of them accepted.
source "$(dirname "$0")/lib.sh"

OLLAMA_MODELS=$TEST_TMP/bad OLLAMA_HOST=127.0.0.1:0 HOME=$TEST_TMP VKLLM_SPECULATIVE=eagle \
  timeout 20 "$VKLLM_BIN" serve >"$TEST_TMP/bad.out" 2>&1 && fail "serve started with eagle"
grep -q "VKLLM_SPECULATIVE=eagle: expected auto, ngram or off" "$TEST_TMP/bad.out" ||
  fail "no clear startup error: $(cat "$TEST_TMP/bad.out")"
pass "an unknown VKLLM_SPECULATIVE is a startup error"

gguf=$VKLLM_SHARED_DIR/testdata/models/tolstoy-mem-q4_k_m.gguf
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" >"$TEST_TMP/Modelfile"
opening='It was in July, 1805, and the speaker was the well-known Anna Pavlovna'
request() {  # request PROMPT N: a greedy raw generate request
  jq -nc --arg p "$1" --argjson n "$2" '{model:"tolstoy",prompt:$p,stream:false,raw:true,
    options:{temperature:0,num_predict:$n}}'
}
# run MODE: serves with that speculation mode (one store for both). With ngram: recites the
# opening, writes the request quoting it to quote.json, the 4 concurrent answers to ngram.N.txt.
# Both: the quoting request's text to MODE.txt, drafted/accepted counts to MODE.metrics.
run() {
  vkllm_start server VKLLM_SPECULATIVE="$1"
  local i
  if [ "$1" = ngram ]; then
    "$VKLLM_BIN" create tolstoy -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create tolstoy"
    expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$(request "$opening" 32)")" 200 \
      "recital: $(body)"
    request "$opening$(jq -j .response "$TEST_TMP/body") $opening" 32 >"$TEST_TMP/quote.json"
  fi
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d @"$TEST_TMP/quote.json")" 200 \
    "quoting request ($1): $(body)"
  jq -j .response "$TEST_TMP/body" >"$TEST_TMP/$1.txt"
  if [ "$1" = ngram ]; then
    local pids=()
    for i in 1 2 3 4; do
      curl -s "$VKLLM_URL/api/generate" -d @"$TEST_TMP/quote.json" | jq -j .response \
        >"$TEST_TMP/$1.$i.txt" &
      pids+=($!)
    done
    wait "${pids[@]}"
  fi
  echo "$(metric vkllm_speculative_drafted_tokens_total) $(metric vkllm_speculative_accepted_tokens_total)" \
    >"$TEST_TMP/$1.metrics"
  vkllm_stop "$VKLLM_PID"
}
run ngram
run off
grep -q 'Scherer, maid of honor' "$TEST_TMP/quote.json" || fail "no recital: $(cat "$TEST_TMP/quote.json")"
cmp -s "$TEST_TMP/off.txt" "$TEST_TMP/ngram.txt" ||
  fail "speculative text differs: '$(cat "$TEST_TMP/ngram.txt")' vs '$(cat "$TEST_TMP/off.txt")'"
for i in 1 2 3 4; do
  cmp -s "$TEST_TMP/off.txt" "$TEST_TMP/ngram.$i.txt" ||
    fail "concurrent request $i differs: '$(cat "$TEST_TMP/ngram.$i.txt")'"
done
read -r drafted accepted <"$TEST_TMP/ngram.metrics"
read -r off_drafted _ <"$TEST_TMP/off.metrics"
expect_eq "$off_drafted" 0 "drafted tokens with VKLLM_SPECULATIVE=off"
[ "$drafted" -gt 0 ] && [ $((accepted * 2)) -gt "$drafted" ] ||
  fail "drafted $drafted, accepted $accepted: expected most drafts of a quoted passage accepted"
pass "prompt lookup: the same greedy text alone and 4 at once; $accepted of $drafted drafted tokens accepted"
