#!/usr/bin/env bash
# Issue 41's reproducers against the real server: prompt work that must stay linear and stop
# with its client, the generation cap, embedding caps, raw blobs verified against their digests,
# create against a concurrent delete, one server per store, and client errors answered as 400s.
source "$(dirname "$0")/lib.sh"

vkllm_start
create_model tiny '{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}'

# --- 3. 20,000 empty system messages: linear rendering, and nobody waits for abandoned ones ---
python3 - "$TEST_TMP/many.json" <<'PY'
import json, sys
msgs = [{"role": "system", "content": ""}] * 20000 + [{"role": "user", "content": "hi"}]
json.dump({"model": "tiny", "messages": msgs, "stream": False,
           "options": {"num_predict": 1, "num_ctx": 64}}, open(sys.argv[1], "w"))
PY
start=$(date +%s.%N)
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary "@$TEST_TMP/many.json")" 200 "20,000 system messages"
took=$(echo "$(date +%s.%N) - $start" | bc)
echo "20,000 system messages answered in ${took} s (44 s before the fix)"
# Four of them whose clients hang up at once, then an ordinary chat.
abandoned=()
for _ in 1 2 3 4; do
  curl -s -m 0.3 "$VKLLM_URL/api/chat" --data-binary "@$TEST_TMP/many.json" >/dev/null &
  abandoned+=($!)
done
sleep 0.5
start=$(date +%s.%N)
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"hello"}],"stream":false,"options":{"num_predict":4}}')" 200 "ordinary chat"
took=$(echo "$(date +%s.%N) - $start" | bc)
echo "an ordinary chat behind four abandoned 20,000-message requests: ${took} s (17-44 s before)"
wait "${abandoned[@]}" || true
pass "prompt rendering is linear in messages and leaves with its client"

# --- 4. num_predict is capped at 10 x num_ctx, as Ollama caps it ---
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":2147483647,"num_ctx":64,"temperature":0}}')" 200 "huge num_predict"
jq -e '.done_reason == "length" and .eval_count == 640' "$TEST_TMP/body" >/dev/null ||
  jq -e '.done_reason == "stop" and .eval_count < 640' "$TEST_TMP/body" >/dev/null ||
  fail "huge num_predict ran past 10 x num_ctx: $(jq -c 'del(.response, .context)' "$TEST_TMP/body")"
pass "num_predict 2^31-1 with num_ctx 64 stops at 640 tokens"

# --- 8. client errors are 400s ---
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","options":{"num_ctx":1e19}}')" 400 "num_ctx 1e19"
expect_eq "$(jq -r .error "$TEST_TMP/body")" 'option "num_ctx" must be of type integer' "num_ctx 1e19 text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","context":[1,2,99999999]}')" 400 "context outside the vocabulary"
grep -q "outside the vocabulary" "$TEST_TMP/body" || fail "context error text: $(body)"
pass "option types and context ids are client errors"

# --- 5. embeddings: input count and answer size capped, large answers streamed ---
vocab=$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-bert-bge.gguf
"$VKLLM_BIN" dev make-model --arch nomic-bert --shape 128x2x4x4 --vocab "$vocab" --seed 11 \
  -o "$TEST_TMP/nomic.gguf" >/dev/null || fail "make-model nomic-bert"
printf 'FROM %s\n' "$TEST_TMP/nomic.gguf" >"$TEST_TMP/Modelfile.nomic"
"$VKLLM_BIN" create nomic -f "$TEST_TMP/Modelfile.nomic" >/dev/null 2>&1 || fail "vkllm create nomic"
python3 -c 'import json; print(json.dumps({"model":"nomic","input":["a"]*2049}))' >"$TEST_TMP/2049.json"
python3 -c 'import json; print(json.dumps({"model":"nomic","input":["word %d" % i for i in range(2048)]}))' >"$TEST_TMP/2048.json"
expect_eq "$(http_status POST "$VKLLM_URL/api/embed" --data-binary "@$TEST_TMP/2049.json")" 400 "2049 inputs"
grep -q "too many inputs: 2049" "$TEST_TMP/body" || fail "input cap text: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/v1/embeddings" --data-binary "@$TEST_TMP/2049.json")" 400 "2049 inputs (OpenAI)"
jq -e '.error.message | test("too many inputs")' "$TEST_TMP/body" >/dev/null || fail "OpenAI input cap shape: $(body)"
curl -s -D "$TEST_TMP/headers" -o "$TEST_TMP/embed.json" "$VKLLM_URL/api/embed" --data-binary "@$TEST_TMP/2048.json"
jq -e '(.embeddings | length) == 2048 and (.embeddings[0] | length) == 128 and .prompt_eval_count > 2048' \
  "$TEST_TMP/embed.json" >/dev/null || fail "2048 embeddings: $(head -c 300 "$TEST_TMP/embed.json")"
grep -qi '^transfer-encoding: chunked' "$TEST_TMP/headers" || fail "a large embed answer is not streamed"
pass "embeddings: 2048 inputs streamed, 2049 refused with a clear 400"

# --- 6. a flipped bit in a raw blob is never served as good ---
# Random 4-bit weights save too little under zstd: the store keeps them raw, with no checksum of
# their own.
gguf=$TEST_TMP/raw-q4.gguf
"$VKLLM_BIN" dev make-model --arch llama --shape 512x2x4x4 --type Q4_0 --seed 5 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$gguf" >/dev/null ||
  fail "make-model Q4_0"
create_model rawq4 '{{ .Prompt }}' "$gguf"
hex=$(sha256sum "$gguf" | cut -d' ' -f1)
blob=$TEST_TMP/server/models/blobs/sha256-$hex
[ -f "$blob" ] || fail "the Q4_0 model's weights are not stored raw (expected $blob)"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"rawq4","prompt":"x","stream":false,"options":{"num_predict":2}}')" 200 "rawq4 loads before the damage"
vkllm_stop "$VKLLM_PID"
size=$(stat -c %s "$blob")
python3 - "$blob" "$((size - 4096))" <<'PY'
import sys
path, at = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0x10]))
PY
vkllm_start
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"rawq4","prompt":"x","stream":false,"options":{"num_predict":2}}')" 500 "load from a corrupted raw blob"
grep -q "is corrupt" "$TEST_TMP/body" || fail "corrupt blob error: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/v2/library/rawq4/blobs/sha256:$hex")" 500 "/v2 serving a corrupted raw blob"
grep -q "is corrupt" "$TEST_TMP/body" || fail "/v2 corrupt blob error: $(body)"
pass "a corrupted raw blob fails the load and is not served by /v2"

# --- 7. one server per store; create against a concurrent delete ---
env OLLAMA_MODELS="$TEST_TMP/server/models" OLLAMA_HOST=127.0.0.1:0 "$VKLLM_BIN" serve \
  >"$TEST_TMP/second.log" 2>&1 && fail "a second server on the same store started"
grep -q "in use by another vkllm process (pid $VKLLM_PID)" "$TEST_TMP/second.log" ||
  fail "second server's message: $(cat "$TEST_TMP/second.log")"
failures=0
for i in $(seq 1 40); do
  system="shared system prompt $i"
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$(jq -nc --arg s "$system" '{model:"victim",from:"tiny",system:$s,stream:false}')")" 200 "create victim $i"
  curl -s -X DELETE "$VKLLM_URL/api/delete" -d '{"model":"victim"}' >/dev/null &
  deleter=$!
  st=$(http_status POST "$VKLLM_URL/api/create" -d "$(jq -nc --arg s "$system" '{model:"survivor",from:"tiny",system:$s,stream:false}')")
  wait "$deleter" || true
  [ "$st" = 200 ] || { failures=$((failures + 1)); echo "create $i: $st $(body)" >&2; }
  expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"survivor"}')" 200 "survivor $i shows"
  jq -e --arg s "$system" '.system == $s' "$TEST_TMP/body" >/dev/null || fail "survivor $i lost its system layer"
done
expect_eq "$failures" 0 "creates racing deletes that failed"
pass "one server per store; create sharing a layer with a model being deleted never fails"
