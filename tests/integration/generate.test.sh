#!/usr/bin/env bash
# Generation through the real server on a fixture model: /api/generate and /api/chat streaming
# and not, Ollama's final-chunk fields, errors and statuses, load/unload and keep_alive, /api/ps,
# prefix reuse across requests, cancellation when the client leaves, /metrics, tokenize.
source "$(dirname "$0")/lib.sh"

vkllm_start
create_model tiny '{{ .Prompt }}'

# --- streaming and non-streaming agree (greedy) and carry Ollama's fields ---
greq='{"model":"tiny","prompt":"The quick brown fox","options":{"temperature":0,"num_predict":16}}'
curl -s "$VKLLM_URL/api/generate" -d "$greq" >"$TEST_TMP/stream.ndjson"
[ "$(wc -l <"$TEST_TMP/stream.ndjson")" -ge 2 ] || fail "stream has too few lines: $(cat "$TEST_TMP/stream.ndjson")"
jq -e -s 'all(.[]; .model == "tiny" and (.created_at | test("Z$")) and (.response | type == "string"))
          and (.[:-1] | all(.done == false)) and (.[-1].done == true)' \
  "$TEST_TMP/stream.ndjson" >/dev/null || fail "stream shape: $(cat "$TEST_TMP/stream.ndjson")"
jq -e -s '.[-1] | .done_reason == "length" and .eval_count == 16 and .prompt_eval_count > 3
          and (.total_duration | type == "number") and .total_duration > 0
          and .eval_duration > 0 and .prompt_eval_duration > 0 and .load_duration > 0
          and (.context | length) == (.prompt_eval_count + 16)' \
  "$TEST_TMP/stream.ndjson" >/dev/null || fail "final chunk: $(tail -1 "$TEST_TMP/stream.ndjson")"
streamed=$(jq -j '.response' "$TEST_TMP/stream.ndjson")
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$(jq -c '.stream=false' <<<"$greq")")" 200 "generate stream:false"
expect_eq "$(jq -j .response "$TEST_TMP/body")" "$streamed" "stream:false text equals the streamed text"
jq -e '.done == true and .done_reason == "length" and .eval_count == 16' "$TEST_TMP/body" >/dev/null ||
  fail "non-stream object: $(body)"
[ -n "$streamed" ] || fail "empty generation"
pass "/api/generate streaming = non-streaming, final chunk fields"

creq='{"model":"tiny","messages":[{"role":"user","content":"The quick brown fox"}],"options":{"temperature":0,"num_predict":16}}'
curl -s "$VKLLM_URL/api/chat" -d "$creq" >"$TEST_TMP/chat.ndjson"
jq -e -s '(.[:-1] | all(.message.role == "assistant" and .done == false))
          and .[-1].done == true and .[-1].done_reason == "length" and (.[-1] | has("context") | not)' \
  "$TEST_TMP/chat.ndjson" >/dev/null || fail "chat stream: $(cat "$TEST_TMP/chat.ndjson")"
expect_eq "$(jq -j '.message.content' "$TEST_TMP/chat.ndjson")" "$streamed" \
  "chat with a {{ .Prompt }} template renders the same prompt as generate"
pass "/api/chat streams Ollama's chunks"

# Sampled with a seed: the same seed gives the same text.
sreq='{"model":"tiny","prompt":"Once","stream":false,"options":{"temperature":1.2,"seed":42,"num_predict":12}}'
a=$(curl -s "$VKLLM_URL/api/generate" -d "$sreq" | jq -j .response)
b=$(curl -s "$VKLLM_URL/api/generate" -d "$sreq" | jq -j .response)
expect_eq "$a" "$b" "same seed, same sample"
pass "seeded sampling is reproducible"

# Stop strings are never emitted: stop at a piece of the greedy text.
piece=$(cut -c 4-6 <<<"$streamed")
stop_req=$(jq -nc --arg s "$piece" '{model:"tiny",prompt:"The quick brown fox",stream:false,
  options:{temperature:0,num_predict:16,stop:[$s]}}')
curl -s "$VKLLM_URL/api/generate" -d "$stop_req" >"$TEST_TMP/stop.json"
jq -e '.done_reason == "stop"' "$TEST_TMP/stop.json" >/dev/null || fail "stop: $(cat "$TEST_TMP/stop.json")"
got=$(jq -j .response "$TEST_TMP/stop.json")
expect_eq "$got" "${streamed%%"$piece"*}" "text before the stop string"
pass "stop strings end generation and are not emitted"

# --- errors in Ollama's shapes ---
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"nope","prompt":"x"}')" 404 "unknown model"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "model 'nope' not found" "unknown model text"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"messages":[]}')" 400 "chat without model"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "model is required" "chat without model text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"","prompt":"x"}')" 404 "generate without model"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","options":{"temperature":"hot"}}')" 400 "option type"
expect_eq "$(jq -r .error "$TEST_TMP/body")" 'option "temperature" must be of type float32' "option type text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","top_logprobs":21}')" 400 "top_logprobs range"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","raw":true,"system":"s"}')" 400 "raw with system"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "raw mode does not support template, system, or context" "raw text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","keep_alive":"300"}')" 400 "keep_alive without unit"
expect_eq "$(jq -r .error "$TEST_TMP/body")" 'time: missing unit in duration "300"' "keep_alive text"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","stream":"yes"}')" 400 "stream type"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"x","images":["@@@"]}]}')" 400 "bad base64 image"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","think":true}')" 400 "think on a non-thinking model"
expect_eq "$(jq -r .error "$TEST_TMP/body")" '"tiny" does not support thinking' "think text"
pass "errors: statuses and Ollama's texts"

# --- logprobs ---
curl -s "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"Hi","stream":false,"logprobs":true,"top_logprobs":3,
  "options":{"temperature":0,"num_predict":4}}' >"$TEST_TMP/lp.json"
jq -e '(.logprobs | length) == 4 and all(.logprobs[]; .logprob <= 0 and (.top_logprobs | length) == 3
        and .top_logprobs[0].logprob >= .top_logprobs[1].logprob and .logprob == .top_logprobs[0].logprob)' \
  "$TEST_TMP/lp.json" >/dev/null || fail "logprobs: $(cat "$TEST_TMP/lp.json")"
pass "logprobs and top_logprobs (greedy picks the top one)"

# --- prefix reuse: a prompt that extends an earlier one computes only its new tokens ---
long="The history of the world is long and full of events that shaped every nation on earth, from the first cities by the rivers to the empires that followed them"
curl -s "$VKLLM_URL/api/generate" -d "$(jq -nc --arg p "$long" '{model:"tiny",prompt:$p,raw:true,stream:false,options:{num_predict:1}}')" >/dev/null
hits0=$(metric vkllm_prefix_cache_hit_tokens_total 'model="tiny:latest"')
prompt0=$(metric vkllm_prompt_tokens_total 'model="tiny:latest"')
curl -s "$VKLLM_URL/api/generate" -d "$(jq -nc --arg p "$long and then more" '{model:"tiny",prompt:$p,raw:true,stream:false,options:{num_predict:1}}')" >"$TEST_TMP/second.json"
hits=$(( $(metric vkllm_prefix_cache_hit_tokens_total 'model="tiny:latest"') - hits0 ))
whole=$(( $(metric vkllm_prompt_tokens_total 'model="tiny:latest"') - prompt0 ))
[ "$hits" -ge 16 ] || fail "second request reused $hits cached tokens"
# Ollama's prompt_eval_count counts the tokens evaluated: the cache hits are not among them.
expect_eq "$(jq .prompt_eval_count "$TEST_TMP/second.json")" $((whole - hits)) "prompt_eval_count of a cache hit"
pass "prefix cache: $hits of $whole prompt tokens reused, prompt_eval_count $((whole - hits))"

# --- the context window: shifting past num_ctx, or stopping at it with shift:false ---
shift_req='{"model":"tiny","prompt":"Count with me","stream":false,"options":{"temperature":0,"num_ctx":32,"num_predict":60}}'
curl -s "$VKLLM_URL/api/generate" -d "$shift_req" >"$TEST_TMP/shift.json"
jq -e '.done_reason == "length" and .eval_count == 60' "$TEST_TMP/shift.json" >/dev/null ||
  fail "context shift: $(cat "$TEST_TMP/shift.json")"
curl -s "$VKLLM_URL/api/generate" -d "$(jq -c '.shift=false' <<<"$shift_req")" >"$TEST_TMP/noshift.json"
jq -e '.done_reason == "length" and .eval_count < 32 and .eval_count > 0' "$TEST_TMP/noshift.json" >/dev/null ||
  fail "shift:false: $(cat "$TEST_TMP/noshift.json")"
long_prompt=$(printf 'word %.0s' $(seq 1 80))
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$(jq -nc --arg p "$long_prompt" '{model:"tiny",prompt:$p,shift:false,options:{num_ctx:32}}')")" 400 "over-long prompt with shift:false"
grep -q 'the prompt is longer than the context length' "$TEST_TMP/body" || fail "shift:false text: $(body)"
curl -s "$VKLLM_URL/api/generate" -d "$(jq -nc --arg p "$long_prompt" '{model:"tiny",prompt:$p,stream:false,options:{num_ctx:32,num_predict:4}}')" >"$TEST_TMP/trunc.json"
jq -e '.done == true and .eval_count == 4 and .prompt_eval_count < 32' "$TEST_TMP/trunc.json" >/dev/null ||
  fail "prompt truncation: $(cat "$TEST_TMP/trunc.json")"
pass "num_ctx: generation shifts past it (60 tokens in a 32-token window), shift:false stops; long prompts truncated or refused"

# --- tokenize / detokenize ---
toks=$(curl -s "$VKLLM_URL/api/tokenize" -d '{"model":"tiny","content":"Hello world"}' | jq -c .tokens)
[ "$(jq length <<<"$toks")" -ge 2 ] || fail "tokenize: $toks"
text=$(curl -s "$VKLLM_URL/api/detokenize" -d "{\"model\":\"tiny\",\"tokens\":$toks}" | jq -r .content)
expect_eq "$text" "Hello world" "detokenize(tokenize(x))"
expect_eq "$(http_status POST "$VKLLM_URL/api/detokenize" -d '{"model":"tiny","tokens":[99999999]}')" 400 "token out of range"
pass "/api/tokenize and /api/detokenize round-trip"

# --- a client that leaves frees its sequence ---
curl -s --max-time 1 "$VKLLM_URL/api/generate" \
  -d '{"model":"tiny","prompt":"Go on forever","options":{"num_predict":100000}}' >/dev/null || true
eventually_eq 0 "running sequences after disconnect" metric vkllm_running_sequences 'model="tiny:latest"'
expect_eq "$(metric vkllm_kv_blocks 'state="used"')" 0 "KV blocks held after disconnect"
[ "$(metric vkllm_sequences_finished_total 'reason="cancelled"')" -ge 1 ] || fail "no cancelled sequence counted"
pass "a disconnected client's blocks are freed"

# --- load, /api/ps, unload ---
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny"}')" 200 "load only"
jq -e '.done == true and .done_reason == "load" and .response == ""' "$TEST_TMP/body" >/dev/null || fail "load: $(body)"
curl -s "$VKLLM_URL/api/ps" >"$TEST_TMP/ps.json"
jq -e '.models | length == 1 and .[0].name == "tiny:latest" and .[0].size > 0
       and (.[0].digest | test("^[0-9a-f]{64}$")) and .[0].context_length > 0
       and .[0].details.family == "llama" and (.[0].expires_at | test("^[0-9]{4}-"))' \
  "$TEST_TMP/ps.json" >/dev/null || fail "ps: $(cat "$TEST_TMP/ps.json")"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","keep_alive":0}')" 200 "unload"
jq -e '.done_reason == "unload"' "$TEST_TMP/body" >/dev/null || fail "unload: $(body)"
loaded_models() { curl -s "$VKLLM_URL/api/ps" | jq '.models | length'; }
eventually_eq 0 "ps after keep_alive 0" loaded_models
curl -s "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","stream":false,"keep_alive":0,"options":{"num_predict":2}}' >/dev/null
eventually_eq 0 "a request with keep_alive 0 unloads when done" loaded_models
[ "$(metric vkllm_model_loads_total 'model="tiny:latest"')" -ge 2 ] || fail "model loads not counted"
pass "load, /api/ps, keep_alive 0 unload"

# --- /metrics is Prometheus text ---
curl -s -D "$TEST_TMP/mh" "$VKLLM_URL/metrics" >"$TEST_TMP/metrics.txt"
grep -qi '^content-type: text/plain; version=0.0.4' "$TEST_TMP/mh" || fail "metrics content type"
for m in vkllm_generated_tokens_total vkllm_time_to_first_token_seconds_bucket vkllm_step_tokens_count \
  vkllm_prompt_tokens_total vkllm_model_loads_total; do
  grep -q "^$m" "$TEST_TMP/metrics.txt" || fail "metric $m missing"
done
pass "/metrics"

# --- structured output: a JSON Schema constrains decoding (property order kept) ---
schema='{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false}'
for route in chat generate; do
  if [ $route = chat ]; then
    req=$(jq -nc --argjson f "$schema" '{model:"tiny",messages:[{role:"user",content:"Who?"}],format:$f,stream:false,options:{temperature:1.0,seed:7,num_predict:300}}')
    curl -s "$VKLLM_URL/api/chat" -d "$req" | jq -j '.message.content' >"$TEST_TMP/fmt.json"
  else
    req=$(jq -nc --argjson f "$schema" '{model:"tiny",prompt:"Who?",format:$f,stream:false,options:{temperature:1.0,seed:7,num_predict:300}}')
    curl -s "$VKLLM_URL/api/generate" -d "$req" | jq -j '.response' >"$TEST_TMP/fmt.json"
  fi
  jq -e '(keys_unsorted == ["name","age"]) and (.name | type == "string" and length <= 8)
         and (.age | type == "number" and . == floor and . >= 0 and . <= 120)' "$TEST_TMP/fmt.json" >/dev/null ||
    fail "$route format output is not valid for the schema: $(cat "$TEST_TMP/fmt.json")"
done
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"x"}],"format":{"type":"object","properties":{"a":{"type":"string","pattern":"(?=x)"}}}}')" 400 "unsupported schema"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"x"}],"format":"yaml"}')" 400 "bad format value"
pass "format: JSON Schema output validates through /api/chat and /api/generate; bad formats are 400"

# --- graceful shutdown: a running stream finishes, then the server exits ---
curl -s "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","options":{"num_predict":30}}' \
  >"$TEST_TMP/grace.ndjson" &
grace_pid=$!
for i in $(seq 1 100); do [ -s "$TEST_TMP/grace.ndjson" ] && break; sleep 0.05; done
vkllm_stop "$VKLLM_PID"
wait $grace_pid
jq -e -s '.[-1].done == true and .[-1].eval_count == 30' "$TEST_TMP/grace.ndjson" >/dev/null ||
  fail "stream cut by SIGTERM: $(tail -2 "$TEST_TMP/grace.ndjson")"
pass "SIGTERM lets a running stream finish (30 tokens) and then exits"

# --- optional API keys ---
printf '# keys\nfirst-key\nsecond-key\n' >"$TEST_TMP/keys"
vkllm_start keyed VKLLM_API_KEY="@$TEST_TMP/keys"
expect_eq "$(http_status GET "$VKLLM_URL/")" 200 "liveness needs no key"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 401 "no key"
jq -e '.error | type == "string"' "$TEST_TMP/body" >/dev/null || fail "Ollama-shaped 401: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/v1/models" -H 'Authorization: Bearer wrong')" 401 "wrong key"
jq -e '.error.type == "invalid_request_error" and .error.code == "invalid_api_key"' "$TEST_TMP/body" >/dev/null ||
  fail "OpenAI-shaped 401: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags" -H 'Authorization: Bearer second-key')" 200 "second key"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags" -H 'Authorization: Bearer first-key')" 200 "first key"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags" -H 'x-api-key: first-key')" 200 "x-api-key"
expect_eq "$(http_status GET "$VKLLM_URL/ui/")" 200 "the web UI's files need no key"
pass "VKLLM_API_KEY: 401 in each API's shape, both keys accepted"
