#!/usr/bin/env bash
# Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) through the real server on
# the fixture model: curl for the SSE framing byte by byte and the error shapes, a request
# sequence shaped like Claude Code's (a long system prompt in blocks with cache_control, dozens
# of tools, streaming, tool results, count_tokens, ?beta=true), then the real npm
# `@anthropic-ai/sdk` (anthropic.mjs: create, stream, stop sequences, count_tokens, thinking, a
# tool loop, errors, API keys).
source "$(dirname "$0")/lib.sh"

plain_template=$'{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:'
# Tools (JSON calls) and <think> tags: the prompt ends in "<think>" while thinking is on.
thinker_template=$'{{- if .Tools }}Tools:{{ range .Tools }} {{ .Function.Name }}{{ end }}\n{{ end }}
{{- range .Messages }}{{ .Role }}: {{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}
{{- range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}\n{{ end }}assistant:{{ if .Think }} <think>{{ end }}'

# post PATH JSON [curl args]: the body goes to $TEST_TMP/body; prints the status.
post() {
  local path=$1 data=$2
  shift 2
  curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$VKLLM_URL$path" -H 'content-type: application/json' \
    -H 'anthropic-version: 2023-06-01' -H 'x-api-key: ignored' -d "$data" "$@"
}

# expect_error STATUS TYPE MESSAGE: the last response was Anthropic's error shape.
expect_error() {
  jq -e --arg t "$2" --arg m "$3" '.type == "error" and .error.type == $t and .error.message == $m' \
    "$TEST_TMP/body" >/dev/null || fail "want $1 $2 '$3', got $(body)"
}

# sse_check FILE: every event is "event: NAME\ndata: <one JSON line>\n\n" with NAME = data.type,
# in Anthropic's order; writes the data objects (one a line) to FILE.json.
sse_check() {
  python3 - "$1" <<'EOF' || fail "SSE framing of $1: $(head -c 800 "$1")"
import json, sys
raw = open(sys.argv[1], 'rb').read().decode()
assert raw.endswith("\n\n"), "stream does not end with a blank line"
out, names = [], []
for e in raw[:-2].split("\n\n"):
    lines = e.split("\n")
    assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), e[:120]
    data = json.loads(lines[1][6:])
    assert data["type"] == lines[0][7:], e[:120]
    names.append(data["type"])
    out.append(json.dumps(data))
assert names[0] == "message_start" and names[1] == "ping", names[:3]
assert names[-2:] == ["message_delta", "message_stop"], names[-3:]
open_index = None
for n, d in zip(names, map(json.loads, out)):
    if n == "content_block_start":
        assert open_index is None, "a block opened inside another"
        open_index = d["index"]
    elif n == "content_block_delta":
        assert d["index"] == open_index, "a delta outside its block"
    elif n == "content_block_stop":
        assert d["index"] == open_index
        open_index = None
assert open_index is None, "a block left open"
open(sys.argv[1] + ".json", "w").write("\n".join(out) + "\n")
EOF
}

vkllm_start
create_model tiny "$plain_template"
create_model thinker "$thinker_template"

# --- stream:false and SSE (greedy: the same text) ---
req='{"model":"tiny","max_tokens":10,"temperature":0,"system":"Be brief.","messages":[{"role":"user","content":"The quick brown fox"}]}'
expect_eq "$(post /v1/messages "$req")" 200 "message: $(body)"
cp "$TEST_TMP/body" "$TEST_TMP/msg.json"
jq -e '(.id | test("^msg_")) and .type == "message" and .role == "assistant" and .model == "tiny"
       and (.content | length) == 1 and .content[0].type == "text" and (.content[0].text | length) > 0
       and .stop_reason == "max_tokens" and .stop_sequence == null and .usage.output_tokens == 10
       and .usage.input_tokens + .usage.cache_read_input_tokens > 5 and .usage.cache_creation_input_tokens == 0' \
  "$TEST_TMP/msg.json" >/dev/null || fail "message object: $(cat "$TEST_TMP/msg.json")"
text=$(jq -j '.content[0].text' "$TEST_TMP/msg.json")
curl -s -D "$TEST_TMP/sse_headers" "$VKLLM_URL/v1/messages" -d "$(jq -c '.stream=true' <<<"$req")" >"$TEST_TMP/msg.sse"
grep -qi '^content-type: text/event-stream' "$TEST_TMP/sse_headers" || fail "SSE content type"
sse_check "$TEST_TMP/msg.sse"
jq -e -s '.[0].message.content == [] and .[0].message.stop_reason == null and .[2].type == "content_block_start"
          and .[2].content_block == {type:"text",text:""} and .[-2].delta.stop_reason == "max_tokens"
          and .[-2].usage.output_tokens == 10 and (.[-2].usage | has("input_tokens") and has("cache_read_input_tokens"))' \
  "$TEST_TMP/msg.sse.json" >/dev/null || fail "events: $(cat "$TEST_TMP/msg.sse.json")"
expect_eq "$(jq -j -s 'map(select(.type == "content_block_delta") | .delta.text) | add' "$TEST_TMP/msg.sse.json")" "$text" \
  "streamed text = stream:false text"
pass "/v1/messages stream:false and SSE (event names, order, blocks, message_delta usage)"

# --- errors in Anthropic's shape ---
expect_eq "$(post /v1/messages '{"model":"tiny","messages":[{"role":"user","content":"x"}]}')" 400 "no max_tokens"
expect_error 400 invalid_request_error "max_tokens: Field required"
expect_eq "$(post /v1/messages '{"model":"nope","max_tokens":4,"messages":[{"role":"user","content":"x"}]}')" 404 "unknown model"
expect_error 404 not_found_error "model 'nope' not found"
expect_eq "$(post /v1/messages '{"model":"nope","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"x"}]}')" 404 "unknown model, streaming"
expect_error 404 not_found_error "model 'nope' not found"
expect_eq "$(post /v1/messages '{"model":"tiny"')" 400 "malformed JSON"
jq -e '.type == "error" and .error.type == "invalid_request_error"' "$TEST_TMP/body" >/dev/null || fail "malformed: $(body)"
expect_eq "$(post /v1/messages '{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}}]}]}')" 400 "image on a text model"
expect_error 400 invalid_request_error '"tiny" does not support images'
expect_eq "$(post /v1/messages '{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}')" 400 "tools on a model without them"
expect_error 400 invalid_request_error "registry.ollama.ai/library/tiny:latest does not support tools"
expect_eq "$(post /v1/messages '{"model":"tiny","max_tokens":4,"messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}}')" 400 "option type"
expect_error 400 invalid_request_error 'option "temperature" must be of type float32'
expect_eq "$(post /v1/messages/count_tokens '{"model":"nope","messages":[{"role":"user","content":"x"}]}')" 404 "count_tokens unknown model"
expect_error 404 not_found_error "model 'nope' not found"
pass "errors: {type:error,error:{type,message}} with 400/404, before a stream too"

# --- a Claude-Code-shaped session: long system blocks, 40 tools, streaming, tool results ---
python3 - "$TEST_TMP" <<'EOF'
import json, sys
tmp = sys.argv[1]
rules = " ".join(f"Rule {i}: keep answers short, use the tools, and never guess file contents." for i in range(60))
system = [{"type": "text", "text": "You are Claude Code, a CLI for coding."},
          {"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}]
tools = [{"name": f"Tool{i}", "description": f"Does task {i} on the repository. " * 4,
          "input_schema": {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#",
                           "properties": {"path": {"type": "string", "description": "A file"},
                                          "limit": {"type": "number"}},
                           "required": ["path"], "additionalProperties": False}} for i in range(40)]
tools[-1]["cache_control"] = {"type": "ephemeral"}
user = {"role": "user", "content": [
    {"type": "text", "text": "<system-reminder>Context: a repository.</system-reminder>"},
    {"type": "text", "text": "Read README.md", "cache_control": {"type": "ephemeral"}}]}
base = {"model": "thinker", "max_tokens": 12, "temperature": 1, "stream": True, "system": system,
        "tools": tools, "metadata": {"user_id": "user_abc_account_1_session_2"},
        "thinking": {"type": "enabled", "budget_tokens": 4000}}
turn1 = dict(base, messages=[user])
turn2 = dict(base, messages=[user,
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "Read it.", "signature": "x"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_01", "name": "Tool3", "input": {"path": "README.md"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
        "content": [{"type": "text", "text": "# vkllm\nA local LLM server."}]},
        {"type": "text", "text": "Summarise it."}]}])
count = {k: turn2[k] for k in ("model", "system", "tools", "messages", "thinking")}
for name, body in (("turn1", turn1), ("turn2", turn2), ("count", count)):
    json.dump(body, open(f"{tmp}/{name}.json", "w"))
EOF
[ "$(stat -c %s "$TEST_TMP/turn1.json")" -gt 20000 ] || fail "the Claude-Code-shaped request is too small"
for turn in turn1 turn2; do
  curl -s "$VKLLM_URL/v1/messages?beta=true" -H 'anthropic-version: 2023-06-01' \
    -H 'anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14' -H 'x-api-key: ignored' \
    -H 'content-type: application/json' -d "@$TEST_TMP/$turn.json" >"$TEST_TMP/$turn.sse"
  sse_check "$TEST_TMP/$turn.sse"
  jq -e -s '.[2].content_block.type == "thinking" and any(.[]; .delta.type? == "thinking_delta")
            and .[-2].delta.stop_reason == "max_tokens" and .[-2].usage.output_tokens == 12' \
    "$TEST_TMP/$turn.sse.json" >/dev/null || fail "$turn events: $(head -c 1500 "$TEST_TMP/$turn.sse.json")"
done
expect_eq "$(post '/v1/messages/count_tokens?beta=true' "@$TEST_TMP/count.json")" 200 "count_tokens: $(body)"
counted=$(jq .input_tokens "$TEST_TMP/body")
used=$(jq -s '.[-2].usage | .input_tokens + .cache_read_input_tokens' "$TEST_TMP/turn2.sse.json")
expect_eq "$counted" "$used" "count_tokens = the prompt the same request evaluated"
cached=$(jq -s '.[-2].usage.cache_read_input_tokens' "$TEST_TMP/turn2.sse.json")
[ "$cached" -gt 500 ] || fail "turn 2 should reuse turn 1's system prompt and tools from the prefix cache: $cached"
pass "Claude-Code-shaped session: 40 tools, system blocks, thinking stream, tool results ($counted tokens, $cached cached)"

# --- a client that leaves cancels its generation ---
curl -s --max-time 1 "$VKLLM_URL/v1/messages" \
  -d '{"model":"tiny","stream":true,"max_tokens":100000,"messages":[{"role":"user","content":"Go on"}]}' >/dev/null || true
eventually_eq 0 "running sequences after disconnect" metric vkllm_running_sequences 'model="tiny:latest"'
pass "a disconnected /v1/messages client's sequence is cancelled"

# --- API keys: a second server requiring one ---
main_url=$VKLLM_URL
vkllm_start keyed VKLLM_API_KEY=sekrit
keyed_url=$VKLLM_URL
create() {
  curl -s -H 'Authorization: Bearer sekrit' "$keyed_url/api/$1" -d "$2" >/dev/null
}
digest=sha256:$(sha256sum "$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf" | cut -d' ' -f1)
curl -s -H 'x-api-key: sekrit' "$keyed_url/api/blobs/$digest" --data-binary "@$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf" >/dev/null
create create "$(jq -nc --arg d "$digest" --arg t "$plain_template" '{model:"tiny",files:{"t.gguf":$d},template:$t,stream:false}')"
VKLLM_URL=$keyed_url
expect_eq "$(curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$keyed_url/v1/messages" -d "$req")" 401 "no key"
expect_error 401 authentication_error "invalid x-api-key: send the server's VKLLM_API_KEY as 'x-api-key: KEY' or 'Authorization: Bearer KEY'"
VKLLM_URL=$main_url
pass "VKLLM_API_KEY: 401 in Anthropic's shape"

node_client "$(dirname "$0")/anthropic.mjs" "$main_url" "$keyed_url" sekrit || fail "npm @anthropic-ai/sdk checks"
pass "npm @anthropic-ai/sdk"
