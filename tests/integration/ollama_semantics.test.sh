#!/usr/bin/env bash
# Where Ollama's semantics are subtle (issue 40 item 2), through the real server with curl and
# the npm `ollama` client (ollama_semantics.mjs): `think` absent on a thinking model thinks,
# "max" is a level and other values are 400 with Ollama's text; `truncate:false` refuses an
# over-long prompt with Ollama's error; prompt_eval_count leaves prefix-cache hits out while
# OpenAI's prompt_tokens and Anthropic's input + cache_read tokens keep the whole prompt.
source "$(dirname "$0")/lib.sh"

thinker_template=$'{{- range .Messages }}{{ .Role }}: {{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}\n{{ end }}assistant:{{ if .Think }} <think>{{ end }}'

vkllm_start
create_model tiny $'{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:'
create_model thinker "$thinker_template"

# --- think ---
chat='{"model":"thinker","messages":[{"role":"user","content":"Why?"}],"stream":false,"options":{"temperature":0,"num_predict":6}}'
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$chat")" 200 "think absent: $(body)"
jq -e '(.message.thinking | length) > 0 and .message.content == ""' "$TEST_TMP/body" >/dev/null ||
  fail "think absent on a thinking model must think: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$(jq -c '.think=false' <<<"$chat")")" 200 "think false"
jq -e '(.message | has("thinking") | not) and (.message.content | length) > 0' "$TEST_TMP/body" >/dev/null ||
  fail "think:false must not think: $(body)"
for level in low medium high max; do
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$(jq -c --arg l $level '.think=$l' <<<"$chat")")" 200 "think $level: $(body)"
done
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$(jq -c '.think="extreme"' <<<"$chat")")" 400 "think extreme"
expect_eq "$(jq -r .error "$TEST_TMP/body")" 'invalid think value: "extreme" (must be "high", "medium", "low", "max", true, or false)' "think level text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"thinker","prompt":"x","think":"none"}')" 400 "generate think none"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$(jq -c '.think=1' <<<"$chat")")" 400 "think 1"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "think must be a boolean or string" "think type text"
# A model without thinking: absent is fine, asked for is refused (as before).
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"x"}],"stream":false,"options":{"num_predict":1}}')" 200 "no think on tiny"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"x"}],"think":"max"}')" 400 "think max on tiny"
pass "think: absent thinks on a thinking model, low/medium/high/max, invalid values 400 with Ollama's text"

# --- truncate:false ---
long=$(printf 'word %.0s' $(seq 1 80))
tchat=$(jq -nc --arg c "$long" '{model:"tiny",messages:[{role:"user",content:$c}],stream:false,options:{num_ctx:32,num_predict:2}}')
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$tchat")" 200 "truncate absent truncates: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$(jq -c '.truncate=false' <<<"$tchat")")" 400 "truncate:false"
jq -r .error "$TEST_TMP/body" | jq -e '.error.code == 400 and .error.type == "exceed_context_size_error"
  and .error.n_ctx == 32 and .error.n_prompt_tokens > 32
  and (.error.message | test("^request \\([0-9]+ tokens\\) exceeds the available context size \\(32 tokens\\), try increasing it$"))' >/dev/null ||
  fail "truncate:false error: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$(jq -nc --arg p "$long" '{model:"tiny",prompt:$p,truncate:false,options:{num_ctx:32}}')")" 400 "generate truncate:false"
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$(jq -c '.truncate=false | del(.stream)' <<<"$tchat")")" 200 "/v1 ignores truncate (not an OpenAI field)"
pass "truncate:false refuses an over-long prompt with Ollama's exceed_context_size_error"

# --- prompt_eval_count leaves prefix-cache hits out; /v1 usage keeps the whole prompt ---
story="The history of the world is long and full of events that shaped every nation on earth, from the first cities by the rivers to the empires that followed them and the ports they built"
pchat=$(jq -nc --arg c "$story" '{model:"tiny",messages:[{role:"user",content:$c}],stream:false,options:{temperature:0,num_predict:1}}')
curl -s "$VKLLM_URL/api/chat" -d "$pchat" >"$TEST_TMP/first.json"
# (tiny and thinker share their weights, so one loaded model, whose label is the first name.)
hits0=$(metric vkllm_prefix_cache_hit_tokens_total)
curl -s "$VKLLM_URL/api/chat" -d "$pchat" >"$TEST_TMP/second.json"
hits=$(( $(metric vkllm_prefix_cache_hit_tokens_total) - hits0 ))
whole=$(jq .prompt_eval_count "$TEST_TMP/first.json")
again=$(jq .prompt_eval_count "$TEST_TMP/second.json")
[ "$hits" -ge 16 ] || fail "the repeated prompt should hit the prefix cache: $hits"
expect_eq "$again" $((whole - hits)) "prompt_eval_count = the prompt less its prefix-cache hits"
ochat=$(jq -c 'del(.options) | .max_tokens=1 | .temperature=0' <<<"$pchat")
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$ochat")" 200 "openai usage"
jq -e --argjson w "$whole" '.usage.prompt_tokens == $w and .usage.prompt_tokens_details.cached_tokens >= 16
  and .usage.total_tokens == $w + 1' "$TEST_TMP/body" >/dev/null || fail "OpenAI usage: $(body) (whole $whole)"
achat=$(jq -c 'del(.options) | .max_tokens=1 | .temperature=0' <<<"$pchat")
expect_eq "$(http_status POST "$VKLLM_URL/v1/messages" -d "$achat")" 200 "anthropic usage: $(body)"
jq -e --argjson w "$whole" '.usage.input_tokens + .usage.cache_read_input_tokens == $w
  and .usage.cache_read_input_tokens >= 16' "$TEST_TMP/body" >/dev/null || fail "Anthropic usage: $(body) (whole $whole)"
pass "prompt_eval_count $whole → $again after $hits cached; /v1 prompt_tokens $whole with cached_tokens; Anthropic input + cache_read"

node_client "$(dirname "$0")/ollama_semantics.mjs" "$VKLLM_URL" || fail "npm ollama client checks"
pass "npm ollama client: think levels and errors"
