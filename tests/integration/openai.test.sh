#!/usr/bin/env bash
# The OpenAI-compatible routes through the real server on a fixture model, with curl (SSE framing
# byte by byte, [DONE], usage, finish reasons, errors in OpenAI's envelope and their statuses,
# /v1/models, Ollama `options` through /v1, streaming = non-streaming for greedy) and then the
# real npm `openai` SDK (openai.mjs).
source "$(dirname "$0")/lib.sh"

chat_template=$'{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:'

# post PATH JSON: the body goes to $TEST_TMP/body, headers to $TEST_TMP/headers; prints the status.
post() {
  curl -s -D "$TEST_TMP/headers" -o "$TEST_TMP/body" -w '%{http_code}' "$VKLLM_URL$1" \
    -H 'Content-Type: application/json' -H 'Authorization: Bearer ignored' -d "$2"
}

# expect_openai_error STATUS TYPE MESSAGE: the last response was OpenAI's error envelope.
expect_openai_error() {
  jq -e --arg t "$2" --arg m "$3" \
    '.error.type == $t and .error.message == $m and .error.param == null and .error.code == null
     and (keys == ["error"])' "$TEST_TMP/body" >/dev/null ||
    fail "want $1 $2 '$3', got $(body)"
  grep -qi '^content-type: application/json' "$TEST_TMP/headers" || fail "error content type"
}

# sse_check FILE: every event is "data: <one line>\n\n" with no other lines, and the stream ends
# with "data: [DONE]\n\n". Writes the JSON payloads (one a line) to FILE.json.
sse_check() {
  python3 - "$1" <<'EOF' || fail "SSE framing of $1: $(head -c 600 "$1")"
import json, sys
raw = open(sys.argv[1], 'rb').read()
assert raw.endswith(b"data: [DONE]\n\n"), "no [DONE] at the end"
events = raw.split(b"\n\n")
assert events[-1] == b"", "trailing bytes after the last event"
events = events[:-1]
assert events[-1] == b"data: [DONE]", "last event is not [DONE]"
out = []
for e in events[:-1]:
    assert e.startswith(b"data: ") and b"\n" not in e, f"bad event {e[:80]!r}"
    out.append(json.dumps(json.loads(e[6:])))
open(sys.argv[1] + ".json", "w").write("\n".join(out) + "\n")
EOF
}

vkllm_start
create_model tiny "$chat_template"
expect_eq "$(http_status POST "$VKLLM_URL/api/copy" -d '{"source":"tiny","destination":"team/tiny:v1"}')" 200 "copy to a namespaced name"

# --- chat completions: stream:false ---
chat='{"model":"tiny","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"The quick brown fox"}],"temperature":0,"max_tokens":10}'
expect_eq "$(post /v1/chat/completions "$chat")" 200 "chat completion: $(body)"
cp "$TEST_TMP/body" "$TEST_TMP/chat.json"
jq -e '(.id | test("^chatcmpl-")) and .object == "chat.completion" and (.created | type == "number")
       and .model == "tiny" and (.choices | length) == 1 and .choices[0].index == 0
       and .choices[0].message.role == "assistant" and (.choices[0].message.content | length) > 0
       and .choices[0].finish_reason == "length" and (.choices[0].message | has("tool_calls") | not)
       and .usage.completion_tokens == 10 and .usage.prompt_tokens > 5
       and .usage.total_tokens == .usage.prompt_tokens + 10' "$TEST_TMP/chat.json" >/dev/null ||
  fail "chat.completion object: $(cat "$TEST_TMP/chat.json")"
grep -qi '^content-type: application/json' "$TEST_TMP/headers" || fail "chat content type"
text=$(jq -j '.choices[0].message.content' "$TEST_TMP/chat.json")
pass "/v1/chat/completions stream:false"

# --- chat completions: SSE ---
stream_req=$(jq -c '.stream=true | .stream_options={include_usage:true}' <<<"$chat")
curl -s -D "$TEST_TMP/sse_headers" "$VKLLM_URL/v1/chat/completions" -d "$stream_req" >"$TEST_TMP/chat.sse"
grep -qi '^content-type: text/event-stream' "$TEST_TMP/sse_headers" || fail "SSE content type: $(cat "$TEST_TMP/sse_headers")"
sse_check "$TEST_TMP/chat.sse"
jq -e -s --slurpfile ref "$TEST_TMP/chat.json" '. as $all |
  (.[0].choices[0].delta.role == "assistant")
  and all(.[]; .object == "chat.completion.chunk" and .id == $all[0].id and .created == $all[0].created
          and .model == "tiny" and .system_fingerprint == "fp_ollama")
  and (.[:-2] | all(.choices[0].finish_reason == null and (.choices[0].delta.content | type == "string")
                    and (has("usage") | not)))
  and (.[1:-2] | all(.choices[0].delta | has("role") | not))
  and .[-2].choices[0].delta == {} and .[-2].choices[0].finish_reason == "length"
  and .[-1].choices == [] and .[-1].usage.completion_tokens == 10
  and .[-1].usage.prompt_tokens == $ref[0].usage.prompt_tokens' "$TEST_TMP/chat.sse.json" >/dev/null ||
  fail "chat chunks: $(cat "$TEST_TMP/chat.sse.json")"
expect_eq "$(jq -j -s '.[:-2] | map(.choices[0].delta.content) | add' "$TEST_TMP/chat.sse.json")" "$text" \
  "streamed text equals the stream:false text (greedy)"
curl -s "$VKLLM_URL/v1/chat/completions" -d "$(jq -c '.stream=true' <<<"$chat")" >"$TEST_TMP/nousage.sse"
sse_check "$TEST_TMP/nousage.sse"
jq -e -s 'all(.[]; has("usage") | not) and .[-1].choices[0].finish_reason == "length"' \
  "$TEST_TMP/nousage.sse.json" >/dev/null || fail "stream without include_usage: $(cat "$TEST_TMP/nousage.sse.json")"
pass "/v1/chat/completions SSE: framing, role first, finish chunk, usage chunk, [DONE], text = stream:false"

# --- request fields: max_completion_tokens, Ollama options (num_predict, num_ctx), stop, logprobs ---
expect_eq "$(post /v1/chat/completions "$(jq -c 'del(.max_tokens) | .max_completion_tokens=4' <<<"$chat")")" 200 "max_completion_tokens"
expect_eq "$(jq .usage.completion_tokens "$TEST_TMP/body")" 4 "max_completion_tokens → num_predict"
expect_eq "$(post /v1/chat/completions "$(jq -c 'del(.max_tokens) | .options={num_predict:3}' <<<"$chat")")" 200 "options.num_predict"
expect_eq "$(jq .usage.completion_tokens "$TEST_TMP/body")" 3 "options.num_predict through /v1"
expect_eq "$(post /v1/chat/completions "$(jq -c '.options={num_predict:3}' <<<"$chat")")" 200 "max_tokens over options"
expect_eq "$(jq .usage.completion_tokens "$TEST_TMP/body")" 10 "max_tokens wins over options.num_predict"
long=$(printf 'word %.0s' $(seq 1 150))
long_req=$(jq -nc --arg c "$long" '{model:"tiny",messages:[{role:"user",content:$c}],temperature:0,max_tokens:2}')
expect_eq "$(post /v1/chat/completions "$long_req")" 200 "long prompt"
full_prompt=$(jq .usage.prompt_tokens "$TEST_TMP/body")
expect_eq "$(post /v1/chat/completions "$(jq -c '.options={num_ctx:64}' <<<"$long_req")")" 200 "options.num_ctx: $(body)"
cut_prompt=$(jq .usage.prompt_tokens "$TEST_TMP/body")
[ "$full_prompt" -gt 64 ] && [ "$cut_prompt" -lt 64 ] ||
  fail "options.num_ctx 64 must truncate the prompt: $full_prompt → $cut_prompt tokens"
piece=$(cut -c 4-6 <<<"$text")
expect_eq "$(post /v1/chat/completions "$(jq -c --arg s "$piece" '.stop=$s' <<<"$chat")")" 200 "stop"
jq -e '.choices[0].finish_reason == "stop"' "$TEST_TMP/body" >/dev/null || fail "stop finish: $(body)"
expect_eq "$(jq -j '.choices[0].message.content' "$TEST_TMP/body")" "${text%%"$piece"*}" "text before the stop string"
expect_eq "$(post /v1/chat/completions "$(jq -c '.max_tokens=3 | .logprobs=true | .top_logprobs=2' <<<"$chat")")" 200 "logprobs"
jq -e '.choices[0].logprobs.content | length == 3 and all(.[]; (.token | type == "string") and .logprob <= 0
       and (.bytes | type == "array") and (.top_logprobs | length) == 2 and .logprob == .top_logprobs[0].logprob)' \
  "$TEST_TMP/body" >/dev/null || fail "logprobs shape: $(body)"
tools_req='{"model":"tiny","temperature":0,"max_tokens":2,"messages":[
  {"role":"user","content":[{"type":"text","text":"Weather?"}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
  {"role":"tool","tool_call_id":"call_1","content":"sunny"}],"tool_choice":"none",
  "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}'
expect_eq "$(post /v1/chat/completions "$tools_req")" 200 "tool round trip with tool_choice none: $(body)"
expect_eq "$(post /v1/chat/completions "$(jq -c '.reasoning_effort="none"' <<<"$chat")")" 200 "reasoning_effort none"
expect_eq "$(post /v1/chat/completions "$(jq -c '.response_format={type:"json_object"} | .max_tokens=2' <<<"$chat")")" 200 "response_format json_object"
pass "max_completion_tokens, options.num_predict/num_ctx, stop, logprobs, tool messages, reasoning_effort none"

# --- errors in OpenAI's envelope ---
expect_eq "$(post /v1/chat/completions '{"model":"nope","messages":[{"role":"user","content":"x"}]}')" 404 "unknown model"
expect_openai_error 404 not_found_error "model 'nope' not found"
expect_eq "$(post /v1/chat/completions '{"model":"nope","stream":true,"messages":[{"role":"user","content":"x"}]}')" 404 "unknown model, streaming"
expect_openai_error 404 not_found_error "model 'nope' not found"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[]}')" 400 "empty messages"
expect_openai_error 400 invalid_request_error "[] is too short - 'messages'"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":null}]}')" 400 "null content"
expect_openai_error 400 invalid_request_error "invalid message content type: <nil>"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}')" 400 "image URL"
expect_openai_error 400 invalid_request_error "image URLs are not currently supported, please use base64 encoded data instead"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{oops"}}]}]}')" 400 "bad tool arguments"
expect_openai_error 400 invalid_request_error "invalid tool call arguments"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"x"}],"reasoning_effort":"high"}')" 400 "thinking on a non-thinking model"
expect_openai_error 400 invalid_request_error '"tiny" does not support thinking'
expect_eq "$(post /v1/chat/completions '{"model":"tiny"')" 400 "malformed JSON"
jq -e '.error.type == "invalid_request_error"' "$TEST_TMP/body" >/dev/null || fail "malformed JSON envelope: $(body)"
expect_eq "$(post /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}}')" 400 "option type"
expect_openai_error 400 invalid_request_error 'option "temperature" must be of type float32'
expect_eq "$(post /v1/completions '{"model":"tiny","prompt":"x","stop":["a",1]}')" 400 "completions stop type"
expect_openai_error 400 invalid_request_error "invalid type for 'stop' field: float64"
expect_eq "$(post /v1/responses '{"model":"tiny","input":[{"type":"input_file"}]}')" 400 "responses unknown item"
jq -e '.error.type == "invalid_request_error"' "$TEST_TMP/body" >/dev/null || fail "responses error: $(body)"
pass "errors: OpenAI envelope and statuses (400/404/500), before a stream too"

# --- completions ---
comp='{"model":"tiny","prompt":"Once upon a time","temperature":0,"max_tokens":8}'
expect_eq "$(post /v1/completions "$comp")" 200 "completion"
cp "$TEST_TMP/body" "$TEST_TMP/comp.json"
jq -e '(.id | test("^cmpl-")) and .object == "text_completion" and .choices[0].index == 0
       and (.choices[0].text | length) > 0 and .choices[0].finish_reason == "length"
       and .usage.completion_tokens == 8' "$TEST_TMP/comp.json" >/dev/null || fail "text_completion: $(cat "$TEST_TMP/comp.json")"
curl -s "$VKLLM_URL/v1/completions" -d "$(jq -c '.stream=true | .stream_options={include_usage:true}' <<<"$comp")" >"$TEST_TMP/comp.sse"
sse_check "$TEST_TMP/comp.sse"
jq -e -s '. as $a | all(.[]; .object == "text_completion" and .id == $a[0].id)
          and (.[:-2] | all(.choices[0].finish_reason == null))
          and .[-2].choices[0].finish_reason == "length" and .[-1].choices == [] and .[-1].usage.completion_tokens == 8' \
  "$TEST_TMP/comp.sse.json" >/dev/null || fail "completion chunks: $(cat "$TEST_TMP/comp.sse.json")"
expect_eq "$(jq -j -s 'map(.choices[0].text // "") | add' "$TEST_TMP/comp.sse.json")" "$(jq -j '.choices[0].text' "$TEST_TMP/comp.json")" \
  "streamed completion = stream:false completion"
pass "/v1/completions stream and not"

# --- models ---
expect_eq "$(http_status GET "$VKLLM_URL/v1/models")" 200 "models list"
jq -e '.object == "list" and (.data | length) == 2
       and any(.data[]; .id == "tiny:latest" and .object == "model" and .owned_by == "library" and (.created | type == "number") and .created > 1600000000)
       and any(.data[]; .id == "team/tiny:v1" and .owned_by == "team")' "$TEST_TMP/body" >/dev/null || fail "models: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/v1/models/tiny")" 200 "retrieve"
jq -e '.id == "tiny" and .object == "model" and .owned_by == "library"' "$TEST_TMP/body" >/dev/null || fail "retrieve: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/v1/models/team/tiny:v1")" 200 "retrieve a namespaced model"
jq -e '.id == "team/tiny:v1" and .owned_by == "team"' "$TEST_TMP/body" >/dev/null || fail "retrieve namespaced: $(body)"
expect_eq "$(http_status GET "$VKLLM_URL/v1/models/nope")" 404 "retrieve unknown"
jq -e '.error.type == "not_found_error" and .error.message == "model '"'nope:latest'"' not found"' "$TEST_TMP/body" >/dev/null ||
  fail "retrieve unknown: $(body)"
pass "/v1/models and /v1/models/{model}"

# --- responses ---
resp='{"model":"tiny","instructions":"Be brief.","input":"The quick brown fox","temperature":0,"max_output_tokens":10}'
expect_eq "$(post /v1/responses "$resp")" 200 "response: $(body)"
cp "$TEST_TMP/body" "$TEST_TMP/resp.json"
jq -e '(.id | test("^resp_")) and .object == "response" and .status == "completed" and .error == null
       and (.output | length) == 1 and .output[0].type == "message" and .output[0].role == "assistant"
       and .output[0].status == "completed" and .output[0].content[0].type == "output_text"
       and .usage.output_tokens == 10 and .usage.total_tokens == .usage.input_tokens + 10
       and .instructions == "Be brief." and .temperature == 0 and .max_output_tokens == 10' \
  "$TEST_TMP/resp.json" >/dev/null || fail "response object: $(cat "$TEST_TMP/resp.json")"
expect_eq "$(jq -j '.output[0].content[0].text' "$TEST_TMP/resp.json")" "$text" \
  "responses with instructions = chat with a system message"
curl -s "$VKLLM_URL/v1/responses" -d "$(jq -c '.stream=true' <<<"$resp")" >"$TEST_TMP/resp.sse"
python3 - "$TEST_TMP/resp.sse" <<'EOF' || fail "responses SSE: $(head -c 800 "$TEST_TMP/resp.sse")"
import json, sys
raw = open(sys.argv[1], 'rb').read().decode()
assert raw.endswith("\n\n") and "[DONE]" not in raw
events = raw[:-2].split("\n\n")
types, text = [], ""
for i, e in enumerate(events):
    lines = e.split("\n")
    assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), e[:100]
    data = json.loads(lines[1][6:])
    assert data["type"] == lines[0][7:] and data["sequence_number"] == i, (i, data)
    types.append(data["type"])
    if data["type"] == "response.output_text.delta":
        text += data["delta"]
want = ["response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added"]
assert types[:4] == want, types
assert types[-4:] == ["response.output_text.done", "response.content_part.done",
                      "response.output_item.done", "response.completed"], types
final = json.loads(events[-1].split("\n")[1][6:])["response"]
assert final["status"] == "completed" and final["output"][0]["content"][0]["text"] == text
open(sys.argv[1] + ".text", "w").write(text)
EOF
expect_eq "$(cat "$TEST_TMP/resp.sse.text")" "$text" "streamed response text"
pass "/v1/responses stream and not (named events, sequence numbers)"

# --- a client that leaves cancels its generation ---
curl -s --max-time 1 "$VKLLM_URL/v1/chat/completions" \
  -d '{"model":"tiny","stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"Go on"}]}' >/dev/null || true
eventually_eq 0 "running sequences after disconnect" metric vkllm_running_sequences 'model="tiny:latest"'
[ "$(metric vkllm_sequences_finished_total 'reason="cancelled"')" -ge 1 ] || fail "no cancelled sequence counted"
pass "a disconnected /v1 client's sequence is cancelled"

# --- the real npm openai SDK ---
node_client "$(dirname "$0")/openai.mjs" "$VKLLM_URL" || fail "npm openai client checks"
pass "npm openai client"
