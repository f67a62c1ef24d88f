#!/usr/bin/env bash
# Hybrid models through the server (issue 36 item 10) on make-model's Qwen3.5 (Gated DeltaNet)
# and LFM2 (short convolutions) test fixtures: a conversation's second turn (/api/generate with
# the first turn's context) resumes from the recurrent-state checkpoint taken after the first
# turn's answer, so its prompt_eval_count is only its new tokens plus the rest of the answer's
# last block, and it answers exactly as the same request on a cold cache (after an unload); a
# client that disconnects mid-stream leaves no running sequence and no KV block in use.
source "$(dirname "$0")/lib.sh"

vkllm_start
text="The quick brown fox jumps over the lazy dog, and the dog, who had seen this happen every morning for years, only sighed and went back to sleep under the old oak tree"
opts='"stream":false,"options":{"temperature":0,"num_predict":20}'
for arch in qwen35 lfm2; do
  "$VKLLM_BIN" dev make-model --arch $arch --shape test --seed 36 \
    --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" -o "$TEST_TMP/$arch.gguf" \
    >/dev/null || fail "make-model $arch"
  create_model $arch '{{ .Prompt }}' "$TEST_TMP/$arch.gguf"
  labels="model=\"$arch:latest\""

  first=$(curl -s "$VKLLM_URL/api/generate" \
    -d "$(jq -nc --arg m $arch --arg p "$text" "{model:\$m,prompt:\$p,$opts}")")
  jq -e '.done_reason == "length" and .eval_count == 20' <<<"$first" >/dev/null ||
    fail "$arch first turn: $first"
  context=$(jq -c .context <<<"$first")
  second_req=$(jq -nc --arg m $arch --argjson c "$context" \
    "{model:\$m,prompt:\" Why did the dog sigh?\",context:\$c,$opts}")
  second=$(curl -s "$VKLLM_URL/api/generate" -d "$second_req")
  # The first turn computed its context but for the last token, with a rolling checkpoint after
  # every full block (16 tokens) of its answer. The second prompt (its context less its answer)
  # starts with that context as Ollama rebuilds it, from the context's text: the same tokens up
  # to where a byte-level token re-tokenizes otherwise.
  read -r whole shared < <(python3 -c '
import json, sys
first, second = json.loads(sys.argv[1]), json.loads(sys.argv[2])
computed = first["context"][:-1]
prompt = second["context"][:len(second["context"]) - second["eval_count"]]
n = 0
while n < min(len(computed), len(prompt) - 1) and computed[n] == prompt[n]:
    n += 1
print(len(prompt), n)' "$first" "$second")
  evaluated=$(jq .prompt_eval_count <<<"$second")
  expect_eq "$evaluated" $((whole - shared / 16 * 16)) "$arch second turn's prompt_eval_count (of $whole, $shared shared)"
  [ "$(metric vkllm_state_checkpoints "$labels")" -gt 0 ] || fail "$arch: no vkllm_state_checkpoints"
  [ $((whole - evaluated)) -ge 64 ] || fail "$arch reused only $((whole - evaluated))"

  # The same request on a cold cache: everything evaluated, the same answer.
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "{\"model\":\"$arch\",\"keep_alive\":0}")" 200 "unload $arch"
  eventually_eq 0 "$arch unloaded" bash -c \
    "curl -s $VKLLM_URL/api/ps | jq '[.models[] | select(.name == \"$arch:latest\")] | length'"
  cold=$(curl -s "$VKLLM_URL/api/generate" -d "$second_req")
  expect_eq "$(jq .prompt_eval_count <<<"$cold")" "$whole" "$arch cold prompt_eval_count"
  expect_eq "$(jq -r .response <<<"$cold")" "$(jq -r .response <<<"$second")" "$arch resumed vs cold answer"
  pass "$arch: the second turn evaluated $evaluated of $whole prompt tokens and answered as a cold cache"

  # A streaming client that goes away after its first tokens.
  curl -sN "$VKLLM_URL/api/generate" -d "$(jq -nc --arg m $arch --arg p "$text" \
    '{model:$m,prompt:$p,options:{temperature:0,num_predict:30000,num_ctx:4096}}')" |
    head -n 3 >/dev/null || true
  eventually_eq 0 "$arch running sequences after a disconnect" metric vkllm_running_sequences "$labels"
  eventually_eq 0 "$arch KV blocks in use after a disconnect" metric vkllm_kv_blocks "$labels,state=\"used\""
  pass "$arch: a disconnected stream leaves no running sequence and no block (or state slot) in use"
done
