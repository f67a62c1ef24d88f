#!/usr/bin/env bash
# gpt-oss end to end, as a new user meets it: `vkllm dev make-model --arch gpt-oss` writes the
# fixture (MXFP4 experts, sinks, biases, alternating window), `vkllm create` stores it from the
# GGUF alone (Harmony is chosen by the architecture), /api/show reports the architecture, experts
# and the tools and thinking capabilities, and /api/chat (think "low") and /v1/chat/completions
# (reasoning_effort) answer on the CPU backend; tool_choice "required" or a named function gets a
# Harmony call every time (its control tokens required by the grammar), parsed into tool_calls.
source "$(dirname "$0")/lib.sh"

# The vocabulary: Llama 3's BPE with Harmony's special tokens (<|channel|>, <|message|>, <|call|>
# ... as control tokens, as o200k_harmony has them).
llama3=$VKLLM_SHARED_DIR/testdata/vocab/llama3.2
"$VKLLM_BIN" dev make-vocab --kind harmony --encoder "$llama3/encoder.json" \
  --merges "$llama3/vocab.bpe" -o "$TEST_TMP/harmony-vocab.gguf" >/dev/null || fail "make-vocab harmony"
"$VKLLM_BIN" dev make-model --arch gpt-oss --shape test --type MXFP4_MOE --seed 3 \
  --vocab "$TEST_TMP/harmony-vocab.gguf" -o "$TEST_TMP/oss.gguf" \
  >/dev/null || fail "make-model gpt-oss"
printf 'FROM %s\n' "$TEST_TMP/oss.gguf" >"$TEST_TMP/Modelfile"
vkllm_start
"$VKLLM_BIN" create oss -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create oss"

expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"oss"}')" 200 "show: $(body)"
jq -e '.model_info["general.architecture"] == "gpt-oss"
       and .model_info["gpt-oss.expert_count"] == 8
       and .model_info["gpt-oss.attention.sliding_window"] == 16
       and (.capabilities | index("tools") != null and index("thinking") != null)' \
  "$TEST_TMP/body" >/dev/null || fail "show: $(jq -c '{capabilities, details}' "$TEST_TMP/body")"
pass "create stores the gpt-oss GGUF; show: architecture, experts, window, tools and thinking"

chat='{"model":"oss","messages":[{"role":"user","content":"Hello there, how are you today?"}],
       "think":"low","stream":false,"options":{"temperature":0,"num_predict":12}}'
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$chat")" 200 "chat: $(body)"
jq -e '.done and .eval_count > 0 and .message.role == "assistant" and .prompt_eval_count > 16' \
  "$TEST_TMP/body" >/dev/null || fail "chat: $(body)"
oai='{"model":"oss","messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0,
      "reasoning_effort":"high"}'
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$oai")" 200 "openai: $(body)"
jq -e '.choices[0].finish_reason != null and .usage.completion_tokens > 0' \
  "$TEST_TMP/body" >/dev/null || fail "openai: $(body)"
pass "gpt-oss chats through /api/chat (think low) and /v1/chat/completions (reasoning_effort)"

# Forced calls: the random model writes <|channel|>commentary to=functions.NAME <|constrain|>json
# <|message|>{args}<|call|> only because the grammar makes it (reasoning_effort "none": no analysis
# message first, which a random model would never end).
node_client "$(dirname "$0")/forced_tools.mjs" "$VKLLM_URL" oss '{"reasoning_effort":"none"}' ||
  fail "tool_choice on gpt-oss through the openai SDK"
req='{"model":"oss","messages":[{"role":"user","content":"Time?"}],"max_tokens":60,"temperature":1.5,
  "seed":9,"logprobs":true,"reasoning_effort":"none","tool_choice":"required","tools":[{"type":"function",
  "function":{"name":"now","parameters":{"type":"object","properties":{}}}}]}'
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$req")" 200 "forced call: $(body)"
expect_eq "$(jq -c '[.choices[0].logprobs.content[].token | select(startswith("<|"))]' "$TEST_TMP/body")" \
  '["<|channel|>","<|constrain|>","<|message|>"]' "Harmony's tags are its special tokens"
pass "gpt-oss: tool_choice required / named → a Harmony call every time, as tool_calls"
