#!/usr/bin/env bash
# A mixture-of-experts model end to end, as a new user meets one: `vkllm dev make-model --arch
# qwen3moe` writes the fixture, `vkllm create` stores it (FROM the GGUF, with a template that has
# <think> tags as Qwen3's does), /api/show reports its architecture, expert counts and the
# thinking capability, and chats through /api/chat (thinking on) and /v1/chat/completions answer.
source "$(dirname "$0")/lib.sh"

"$VKLLM_BIN" dev make-model --arch qwen3moe --shape test --type Q8_0 --seed 3 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$TEST_TMP/moe.gguf" \
  >/dev/null || fail "make-model qwen3moe"
cat >"$TEST_TMP/Modelfile" <<MF
FROM $TEST_TMP/moe.gguf
TEMPLATE """{{- range .Messages }}<|im_start|>{{ .Role }}
{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
{{ if .Think }}<think>{{ end }}"""
MF
vkllm_start
"$VKLLM_BIN" create moe -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create moe"

expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"moe"}')" 200 "show: $(body)"
jq -e '.model_info["general.architecture"] == "qwen3moe"
       and .model_info["qwen3moe.expert_count"] == 8
       and .model_info["qwen3moe.expert_used_count"] == 2
       and (.capabilities | index("completion") != null and index("thinking") != null)' \
  "$TEST_TMP/body" >/dev/null || fail "show: $(jq -c '{capabilities, details}' "$TEST_TMP/body")"
pass "create stores the qwen3moe GGUF; show: architecture, experts, thinking"

chat='{"model":"moe","messages":[{"role":"user","content":"Hello"}],"think":true,"stream":false,
       "options":{"temperature":0,"num_predict":12}}'
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$chat")" 200 "chat: $(body)"
jq -e '.done and .eval_count == 12 and .message.role == "assistant"
       and ((.message.content // "") + (.message.thinking // "") | length > 0)' \
  "$TEST_TMP/body" >/dev/null || fail "chat: $(body)"
oai='{"model":"moe","messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0}'
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$oai")" 200 "openai: $(body)"
jq -e '.choices[0].finish_reason == "length" and .usage.completion_tokens == 6' \
  "$TEST_TMP/body" >/dev/null || fail "openai: $(body)"
pass "the MoE model chats through /api/chat (thinking on) and /v1/chat/completions"
