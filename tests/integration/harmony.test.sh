#!/usr/bin/env bash
# Harmony (gpt-oss's chat format) through the real server, on the tiny llama fixture forced to it
# by a Modelfile (RENDERER harmony, PARSER harmony): /api/show lists tools and thinking; the prompt
# /api/chat builds (_debug_render_only) is Ollama's gpt-oss prompt with the request's think level,
# tools renamed to TypeScript identifiers and the system text as developer instructions;
# /v1/chat/completions' reasoning_effort reaches it; output forced into Harmony (guided_choice)
# comes back as reasoning, content and tool calls, streamed and not; and output that is not
# Harmony at all is kept as content, byte for byte (/api/chat streaming = raw /api/generate).
source "$(dirname "$0")/lib.sh"

vkllm_start
create_model tiny '{{ .Prompt }}'
expect_eq "$(http_status POST "$VKLLM_URL/api/create" \
  -d '{"model":"oss","modelfile":"FROM tiny\nRENDERER harmony\nPARSER harmony","stream":false}')" 200 "create oss: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"oss"}')" 200 "show oss"
expect_eq "$(jq -c .capabilities "$TEST_TMP/body")" '["completion","tools","thinking"]' "capabilities"
pass "/api/show: tools and thinking"

# --- the prompt: think levels, tools, system text ---
tools='[{"type":"function","function":{"name":"get-weather","description":"Weather of a city",
  "parameters":{"type":"object","required":["city"],"properties":{
    "city":{"type":"string","description":"City name"},"days":{"type":["integer","null"]}}}}}]'
render() {  # render THINK_JSON: the prompt /api/chat builds for a system + user conversation
  jq -nc --argjson tools "$tools" --argjson think "$1" \
    '{model:"oss", messages:[{role:"system",content:"Be brief."},{role:"user",content:"Weather in Paris?"}],
      tools:$tools, stream:false, _debug_render_only:true} + (if $think == null then {} else {think:$think} end)' \
    >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d @"$TEST_TMP/req.json")" 200 "render think=$1: $(body)"
  jq -j '._debug_info.rendered_template' "$TEST_TMP/body"
}
want=$(printf '%s' "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.
Knowledge cutoff: 2024-06
Current date: $(date +%F)

Reasoning: high

# Valid channels: analysis, commentary, final. Channel must be included for every message.
Calls to these tools must go to the commentary channel: 'functions'.<|end|><|start|>developer<|message|># Tools

## functions

namespace functions {

// Weather of a city
type get_weather = (_: {
  // City name
  city: string,
  days: number | null,
}) => any;

} // namespace functions

# Instructions

Be brief.<|end|><|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant")
expect_eq "$(render '"high"')" "$want" "prompt with think high"
render '"low"' | grep -q '^Reasoning: low$' || fail "think low: $(render '"low"')"
render '"max"' | grep -q '^Reasoning: high$' || fail "think max is high for Harmony"
render 'null' | grep -q '^Reasoning: medium$' || fail "no think: medium"
render 'true' | grep -q '^Reasoning: medium$' || fail "think true: medium"
if render 'false' | grep -q 'Reasoning'; then fail "think false still reasons"; fi
pass "prompt byte for byte; think low/medium/high/max/true/false"

# reasoning_effort on /v1/chat/completions: its prompt has as many tokens as /api/chat's prompt
# for that think level (the reasoning line is one of them: none < high).
v1_count() {  # v1_count EFFORT: the whole prompt's tokens (cache hits included)
  curl -s "$VKLLM_URL/v1/chat/completions" -d "{\"model\":\"oss\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],
    \"max_tokens\":1,\"reasoning_effort\":\"$1\"}" | jq -r .usage.prompt_tokens
}
chat_count() {  # chat_count THINK_JSON: tokens of the prompt /api/chat builds
  jq -nc --argjson t "$1" '{model:"oss", messages:[{role:"user",content:"Hi"}], think:$t, stream:false,
    _debug_render_only:true}' | curl -s "$VKLLM_URL/api/chat" -d @- |
    jq -c '{model:"oss", content:._debug_info.rendered_template, add_special:true}' |
    curl -s "$VKLLM_URL/api/tokenize" -d @- | jq '.tokens | length'
}
high=$(v1_count high)
none=$(v1_count none)
expect_eq "$high" "$(chat_count '"high"')" "reasoning_effort high = think high"
expect_eq "$none" "$(chat_count false)" "reasoning_effort none = think false"
[ "$none" -lt "$high" ] || fail "reasoning line missing: $none vs $high tokens"
pass "reasoning_effort reaches the prompt ($none / $high prompt tokens)"

# --- output in Harmony, forced with guided_choice, parsed into the response's fields ---
answer='<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!'
req=$(jq -nc --arg a "$answer" '{model:"oss", messages:[{role:"user",content:"Hi"}], max_tokens:200,
  temperature:0, guided_choice:[$a], stream:true}')
curl -s "$VKLLM_URL/v1/chat/completions" -d "$req" | sed -n 's/^data: //p' | grep -v '^\[DONE\]' >"$TEST_TMP/sse"
expect_eq "$(jq -j '.choices[0].delta.reasoning // ""' "$TEST_TMP/sse")" "User greets." "streamed reasoning"
expect_eq "$(jq -j '.choices[0].delta.content // ""' "$TEST_TMP/sse")" "Hello there!" "streamed content"
call='<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
req=$(jq -nc --arg a "$call" --argjson tools "$tools" '{model:"oss", messages:[{role:"user",content:"Weather?"}],
  tools:$tools, max_tokens:200, temperature:0, guided_choice:[$a]}')
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$req")" 200 "tool call: $(body)"
jq -e '.choices[0] | .finish_reason == "tool_calls" and .message.reasoning == "Need the weather."
       and .message.tool_calls[0].function.name == "get-weather"
       and (.message.tool_calls[0].function.arguments | fromjson) == {city:"Paris"}' "$TEST_TMP/body" >/dev/null ||
  fail "tool call response: $(body)"
pass "Harmony output as reasoning, content and tool calls (streamed and not)"

# --- /api/chat streaming: output with no Harmony in it is content, nothing lost ---
chat='{"model":"oss","messages":[{"role":"user","content":"The quick brown fox"}],"think":"low","options":{"temperature":0,"num_predict":24}}'
curl -s "$VKLLM_URL/api/chat" -d "$chat" >"$TEST_TMP/chat.ndjson"
jq -e -s '(.[:-1] | all(.done == false and .message.role == "assistant")) and .[-1].done == true
          and all(.message.thinking == null or .message.thinking == "")' "$TEST_TMP/chat.ndjson" >/dev/null ||
  fail "chat stream: $(cat "$TEST_TMP/chat.ndjson")"
prompt=$(jq -c '. + {stream:false, _debug_render_only:true}' <<<"$chat" | curl -s "$VKLLM_URL/api/chat" -d @- | jq -r '._debug_info.rendered_template')
raw=$(jq -nc --arg p "$prompt" '{model:"oss", prompt:$p, raw:true, stream:false, options:{temperature:0, num_predict:24}}' |
  curl -s "$VKLLM_URL/api/generate" -d @- | jq -j .response)
[ -n "$raw" ] || fail "empty raw generation"
expect_eq "$(jq -j '.message.content' "$TEST_TMP/chat.ndjson")" "$raw" "chat content = raw continuation"
pass "/api/chat streaming keeps non-Harmony output as content"
