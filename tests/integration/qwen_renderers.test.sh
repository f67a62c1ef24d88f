#!/usr/bin/env bash
# Ollama's built-in renderers through the real server (issues 35/36/37): a Qwen 3.5 model created
# with RENDERER/PARSER qwen3.5 in a Modelfile (`vkllm create`) from a qwen35 make-model fixture,
# and a Qwen3-Coder one created through /api/create's "renderer"/"parser" fields, list the
# parsers' capabilities in /api/show; /api/chat (_debug_render_only) and `vkllm debug render`
# build exactly the golden prompts of tests/unit/prompt/testdata/qwen for Ollama's test
# conversations with tools; a real /api/chat with tools on the random weights answers (no real
# call can come from them: the parsers are unit-tested in unit_prompt's QwenParsers). A gemma4
# fixture named with RENDERER gemma4-large / lfm2-thinking does the same with Gemma 4's and
# LFM2's golden cases (testdata/gemma4, testdata/lfm2), and a chat after a tool result is
# thinking only when think is on (Gemma 4's prompt opened the thought channel).
source "$(dirname "$0")/lib.sh"

D=$VKLLM_SOURCE_DIR/tests/unit/prompt/testdata/qwen
"$VKLLM_BIN" dev make-model --arch qwen35 --shape test --seed 35 --threads 2 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$TEST_TMP/q35.gguf" \
  >/dev/null || fail "make-model qwen35"
vkllm_start

# debug_render MODEL CASE: the prompt /api/chat builds for the case's request body.
debug_render() {
  jq -c --arg m "$1" '.request + {model: $m, stream: false, _debug_render_only: true}' "$D/$2.json" \
    >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d @"$TEST_TMP/req.json")" 200 "render $2: $(body)"
  jq -j '._debug_info.rendered_template' "$TEST_TMP/body" >"$TEST_TMP/got"
  cmp -s "$TEST_TMP/got" "$D/$2.prompt" ||
    fail "$2 through /api/chat differs: $(diff "$D/$2.prompt" "$TEST_TMP/got" | head -20)"
}
# capabilities MODEL: /api/show's capabilities, sorted, comma-separated.
capabilities() {
  expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d "{\"model\":\"$1\"}")" 200 "show $1: $(body)"
  jq -r '.capabilities | sort | join(",")' "$TEST_TMP/body"
}

# --- Qwen 3.5: a Modelfile naming Ollama's renderer and parser ---
printf 'FROM %s\nRENDERER qwen3.5\nPARSER qwen3.5\n' "$TEST_TMP/q35.gguf" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create q35 -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create q35"
expect_eq "$(capabilities q35)" "completion,thinking,tools" "qwen3.5 capabilities"
for c in qwen35-tool-history qwen35-interleaved-thinking qwen35-no-think qwen35-prefill; do
  debug_render q35 "$c"
done
# The CLI renders an installed model's request the same way.
jq '.request' "$D/qwen35-parallel-calls.json" >"$TEST_TMP/cli.json"
OLLAMA_MODELS=$TEST_TMP/server/models "$VKLLM_BIN" debug render --model q35 --request "$TEST_TMP/cli.json" >"$TEST_TMP/cli.txt" ||
  fail "vkllm debug render"
cmp -s "$TEST_TMP/cli.txt" "$D/qwen35-parallel-calls.prompt" ||
  fail "debug render differs: $(diff "$D/qwen35-parallel-calls.prompt" "$TEST_TMP/cli.txt" | head)"
pass "qwen3.5: capabilities, 5 golden prompts through /api/chat and vkllm debug render"

# Real chats with tools: the prompt opened a think block, so the qwen3.5 parser reads the
# (random) output as thinking; with think false it is all content.
chat_q35() {
  jq -c --argjson think "$1" '.request + {model: "q35", stream: false, think: $think,
    options: {temperature: 0, num_predict: 8}} | .messages |= .[:2]' "$D/qwen35-tool-history.json"     >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d @"$TEST_TMP/req.json")" 200 "chat q35: $(body)"
}
chat_q35 true
jq -e '.done and .eval_count == 8 and .message.content == "" and (.message.thinking | length) > 0'   "$TEST_TMP/body" >/dev/null || fail "chat q35 thinking: $(body)"
chat_q35 false
jq -e '.done and .eval_count == 8 and (.message.content | length) > 0 and (.message.thinking // "") == ""'   "$TEST_TMP/body" >/dev/null || fail "chat q35 no thinking: $(body)"
pass "qwen3.5: /api/chat with tools generates; its output parsed as thinking unless think is false"

# --- Qwen3-Coder: /api/create's renderer and parser fields ---
digest=$(upload_blob "$TEST_TMP/q35.gguf")
req=$(jq -nc --arg d "$digest" '{model: "coder", files: {"m.gguf": $d}, renderer: "qwen3-coder",
  parser: "qwen3-coder", stream: false}')
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create coder: $(body)"
expect_eq "$(capabilities coder)" "completion,tools" "qwen3-coder capabilities"
for c in qwen3coder-tools-and-response qwen3coder-parallel-calls qwen3coder-prefill; do
  debug_render coder "$c"
done
# No thinking: think true is refused as for any model without the capability.
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" \
  -d '{"model":"coder","messages":[{"role":"user","content":"hi"}],"think":true,"stream":false}')" \
  400 "coder think: $(body)"
pass "qwen3-coder: capabilities, 3 golden prompts through /api/chat, no thinking"

# --- Gemma 4 and LFM2 (issues 36/37): Ollama's names on a 2-layer gemma4 fixture ---
G=$VKLLM_SOURCE_DIR/tests/unit/prompt/testdata
"$VKLLM_BIN" dev make-model --arch gemma4 --shape 64x2x2x1 --seed 53 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" -o "$TEST_TMP/g4.gguf" \
  >/dev/null || fail "make-model gemma4"
# render_case MODEL FILE NAME RENDERER: a golden case of FILE through /api/chat.
render_case() {
  jq -c --arg m "$1" --arg n "$3" --arg r "$4" '.[] | select(.name == $n and .renderer == $r) |
    .request + {model: $m, stream: false, _debug_render_only: true}' "$G/$2" >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d @"$TEST_TMP/req.json")" 200 "render $3: $(body)"
  jq -j '._debug_info.rendered_template' "$TEST_TMP/body" >"$TEST_TMP/got"
  jq -j --arg n "$3" --arg r "$4" '.[] | select(.name == $n and .renderer == $r) | .prompt' "$G/$2" \
    >"$TEST_TMP/want"
  cmp -s "$TEST_TMP/got" "$TEST_TMP/want" ||
    fail "$3 ($4) through /api/chat differs: $(diff "$TEST_TMP/want" "$TEST_TMP/got" | head -20)"
}
printf 'FROM %s\nRENDERER gemma4-large\nPARSER gemma4\n' "$TEST_TMP/g4.gguf" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create g4 -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create g4"
expect_eq "$(capabilities g4)" "completion,thinking,tools" "gemma4 capabilities"
render_case g4 gemma4/renderer_cases.json thinking_enabled_with_pending_tool_call gemma4-large
# (think explicit in both: the server thinks by default for a thinking model, as Ollama does)
render_case g4 gemma4/renderer_cases.json thinking_explicitly_disabled gemma4-large
# A real chat with tools after a tool result: the prompt opened the thought channel, so with
# think on the (random) output is thinking; with think off it is content.
chat_g4() {
  jq -c --argjson think "$1" '.request + {model: "g4", stream: false, think: $think,
    options: {temperature: 0, num_predict: 8}}' <(jq '.[] | select(.name ==
    "terminal_tool_response_adds_thinking_cue_when_thinking_enabled")' "$G/gemma4/renderer_cases.json") \
    >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d @"$TEST_TMP/req.json")" 200 "chat g4: $(body)"
}
chat_g4 true
jq -e '.done and .eval_count == 8 and .message.content == "" and (.message.thinking | length) > 0' \
  "$TEST_TMP/body" >/dev/null || fail "chat g4 thinking: $(body)"
chat_g4 false
jq -e '.done and (.message.thinking // "") == ""' "$TEST_TMP/body" >/dev/null ||
  fail "chat g4 no thinking: $(body)"
printf 'FROM %s\nRENDERER lfm2-thinking\nPARSER lfm2-thinking\n' "$TEST_TMP/g4.gguf" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create lfm -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create lfm"
expect_eq "$(capabilities lfm)" "completion,thinking,tools" "lfm2-thinking capabilities"
render_case lfm lfm2/renderer_cases.json thinking_precedes_tool_calls lfm2-thinking
pass "gemma4, lfm2: capabilities, golden prompts through /api/chat, thinking after tool results"
