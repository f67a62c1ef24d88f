#!/usr/bin/env bash
# Constrained decoding through the real server on a random-weight fixture sampled hot
# (temperature 1.5): JSON output starts at its value and never runs on whitespace (issue 40.3);
# llama.cpp's `grammar` and vLLM's structured_outputs (regex, choice, grammar, json) hold on the
# /v1 routes, and what is not supported is a 400 naming it (40.5); a format whose regex is too
# costly to compile gets its 400 without stalling other routes, and repeats of it come from the
# compile cache (41.2). tool_choice through the npm openai SDK is in grammar_tools.mjs (40.4), and
# in the built-in parsers' and Llama 4's syntaxes in forced_tools.mjs.
source "$(dirname "$0")/lib.sh"

chat_template=$'{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:'
tool_template=$'{{- if .Tools }}Tools:{{ range .Tools }} {{ .Function.Name }}{{ end }}\n{{ end }}'
tool_template+=$'{{- range .Messages }}{{ .Role }}: {{ .Content }}'
tool_template+=$'{{ if .ToolCalls }}<tool_call>{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}</tool_call>{{ end }}\n'
tool_template+=$'{{ end }}assistant:'

post() {
  curl -s -o "$TEST_TMP/body" -w '%{http_code}' "$VKLLM_URL$1" -H 'Content-Type: application/json' -d "$2"
}

vkllm_start
create_model tiny "$chat_template"
create_model tooly "$tool_template"

# --- 40.3: the value starts at once; whitespace runs stay within llama.cpp's bound ---
# (outside strings: at most "\n\n" and 20 spaces/tabs, i.e. 22 characters).
check_json_text() {
  python3 - "$1" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
assert text, "empty output"
assert text[0] in "{[", f"output does not start at its value: {text[:40]!r}"
run = longest = 0
in_string = escaped = False
for c in text:
    if in_string:
        if escaped: escaped = False
        elif c == "\\": escaped = True
        elif c == '"': in_string = False
        continue
    if c == '"': in_string = True
    if c in " \t\n\r":
        run += 1
        longest = max(longest, run)
    else:
        run = 0
assert longest <= 22, f"a whitespace run of {longest}: {text!r}"
print(longest)
PY
}
for seed in 1 2 3 4 5 6; do
  for fmt in '"json"' '{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]}'; do
    req=$(jq -nc --argjson f "$fmt" --argjson s "$seed" \
      '{model:"tiny",stream:false,format:$f,options:{temperature:1.5,seed:$s,num_predict:96},
        messages:[{role:"user",content:"Answer in JSON."}]}')
    expect_eq "$(post /api/chat "$req")" 200 "format chat: $(body)"
    jq -j .message.content "$TEST_TMP/body" >"$TEST_TMP/out.txt"
    longest=$(check_json_text "$TEST_TMP/out.txt") || fail "seed $seed format $fmt: $(cat "$TEST_TMP/out.txt")"
  done
done
pass "format json/schema at temperature 1.5: output starts at '{', whitespace runs <= 22 (last: $longest)"

# --- 40.5: grammar and structured_outputs on /v1 ---
v1() {  # v1 EXTRA_JSON: a hot chat completion with the given fields merged in
  jq -nc --argjson x "$1" '{model:"tiny",temperature:1.5,seed:7,max_tokens:48,
    messages:[{role:"user",content:"Go."}]} + $x'
}
content() { jq -j '.choices[0].message.content' "$TEST_TMP/body"; }
gbnf='root ::= answer " " [0-9]{1,3} "."
answer ::= "yes" | "no"'
for seed in 1 2 3; do
  expect_eq "$(post /v1/chat/completions "$(v1 "$(jq -nc --arg g "$gbnf" --argjson s $seed '{grammar:$g,seed:$s}')")")" 200 "grammar: $(body)"
  [[ "$(content)" =~ ^(yes|no)\ [0-9]{1,3}\.$ ]] || fail "grammar output '$(content)'"
  expect_eq "$(post /v1/chat/completions "$(v1 "$(jq -nc --argjson s $seed '{structured_outputs:{choice:["alpha","beta","gamma"]},seed:$s}')")")" 200 "choice"
  [[ "$(content)" =~ ^(alpha|beta|gamma)$ ]] || fail "choice output '$(content)'"
  expect_eq "$(post /v1/chat/completions "$(v1 "$(jq -nc --argjson s $seed '{structured_outputs:{regex:"[A-Z]{2}-[0-9]{4}"},seed:$s}')")")" 200 "regex"
  [[ "$(content)" =~ ^[A-Z]{2}-[0-9]{4}$ ]] || fail "regex output '$(content)'"
  expect_eq "$(post /v1/completions "$(jq -nc --argjson s $seed '{model:"tiny",prompt:"x",temperature:1.5,seed:$s,max_tokens:16,guided_choice:["on","off"]}')")" 200 "guided_choice"
  [[ "$(jq -j '.choices[0].text' "$TEST_TMP/body")" =~ ^(on|off)$ ]] || fail "completions choice: $(body)"
done
schema='{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}'
expect_eq "$(post /v1/chat/completions "$(v1 "$(jq -nc --arg s "$schema" '{structured_outputs:{json:$s}}')")")" 200 "structured json"
content | jq -e '.ok | type == "boolean"' >/dev/null || fail "structured json output '$(content)'"
pass "grammar (GBNF), structured_outputs choice/regex/json, guided_choice: outputs match at temperature 1.5"

expect_error() {  # expect_error STATUS BODY_FIELDS SUBSTRING
  local st
  st=$(post /v1/chat/completions "$(v1 "$2")")
  expect_eq "$st" "$1" "status for $2: $(body)"
  jq -e --arg m "$3" '.error.type == "invalid_request_error" and (.error.message | contains($m))' \
    "$TEST_TMP/body" >/dev/null || fail "error for $2: $(body)"
}
expect_error 400 '{"grammar":"root ::= <[1000]>"}' 'invalid grammar: token references (<...>) are not supported at 1:10'
expect_error 400 '{"grammar":"root ::= x"}' 'rule "x" is not defined'
expect_error 400 '{"structured_outputs":{"regex":"a(?=b)"}}' 'invalid regex: lookahead and lookbehind are not supported'
expect_error 400 '{"structured_outputs":{"structural_tag":"{}"}}' 'structured_outputs.structural_tag is not supported'
expect_error 400 '{"structured_outputs":{"choice":["a"],"regex":"b"}}' 'only one output constraint'
expect_error 400 '{"structured_outputs":{"choice":[]}}' 'structured_outputs.choice must be a non-empty array of strings'
pass "unsupported or invalid constraints: 400 in OpenAI's shape naming the construct"

# --- 41.2: a costly regex gets its 400 off the I/O threads; the server stays responsive ---
format_req() {  # format_req PATTERN: a chat whose schema has that pattern
  jq -nc --arg p "$1" '{model:"tiny",stream:false,options:{num_predict:4},
    messages:[{role:"user",content:"x"}],format:{type:"object",properties:{s:{type:"string",pattern:$p}}}}'
}
pids=()
for i in 0 1 2 3; do
  pattern="^.{0,100}.{0,100}.{0,9$i}\$"
  curl -s -o "$TEST_TMP/costly$i" -w '%{http_code} %{time_total}\n' "$VKLLM_URL/api/chat" \
    -d "$(format_req "$pattern")" >"$TEST_TMP/costly$i.status" &
  pids+=($!)
done
slowest=0
for i in $(seq 1 10); do
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 30 "$VKLLM_URL/")
  slowest=$(python3 -c "print(max($slowest, $t))")
  sleep 0.1
done
for pid in "${pids[@]}"; do wait "$pid"; done
for i in 0 1 2 3; do
  read -r st secs <"$TEST_TMP/costly$i.status"
  expect_eq "$st" 400 "costly pattern $i: $(cat "$TEST_TMP/costly$i")"
  jq -e --arg p "^.{0,100}.{0,100}.{0,9$i}\$" '.error | contains("\"pattern\" \"" + $p + "\" is too complex to compile")' \
    "$TEST_TMP/costly$i" >/dev/null || fail "costly pattern error: $(cat "$TEST_TMP/costly$i")"
  echo "costly pattern $i: 400 after ${secs}s"
done
echo "GET / while four costly patterns compiled: slowest ${slowest}s"
python3 -c "import sys; sys.exit(0 if $slowest < 3 else 1)" ||
  fail "GET / took ${slowest}s while formats compiled (it must not wait for them)"
again=$(curl -s -o "$TEST_TMP/again" -w '%{http_code} %{time_total}' "$VKLLM_URL/api/chat" -d "$(format_req '^.{0,100}.{0,100}.{0,90}$')")
expect_eq "${again% *}" 400 "the same costly pattern again: $(cat "$TEST_TMP/again")"
echo "the same costly pattern again (compile cache): 400 after ${again#* }s"
issue=$(curl -s -o "$TEST_TMP/issue" -w '%{http_code} %{time_total}' "$VKLLM_URL/api/chat" -d "$(format_req '.{0,100}.{0,100}.{0,90}')")
expect_eq "${issue% *}" 200 "issue 41's unanchored pattern compiles: $(cat "$TEST_TMP/issue")"
echo "issue 41's unanchored pattern: 200 after ${issue#* }s"
pass "costly patterns: 400 naming the pattern, GET / not held up, cached repeats"

# --- 40.4: tool_choice through the npm openai SDK ---
node_client "$(dirname "$0")/grammar_tools.mjs" "$VKLLM_URL" || fail "tool_choice through the openai SDK"
pass "tool_choice required / named / parallel_tool_calls false / none through the openai SDK"

# --- tool_choice in the built-in parsers' syntaxes: Mistral's [TOOL_CALLS]NAME[ARGS]{...}, Qwen's
# XML calls (parameters typed by the schema), Gemma 4's call:NAME{key:value} and LFM2's
# [NAME(key=value)], on the tiny fixture named with their renderers and parsers ---
for spec in 'mis:PARSER ministral' 'coder:RENDERER qwen3-coder\nPARSER qwen3-coder' \
  'q35:RENDERER qwen3.5\nPARSER qwen3.5' 'g4:RENDERER gemma4\nPARSER gemma4' 'lf:RENDERER lfm2\nPARSER lfm2'; do
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" \
    -d "{\"model\":\"${spec%%:*}\",\"modelfile\":\"FROM tiny\\n${spec#*:}\",\"stream\":false}")" 200 "create ${spec%%:*}: $(body)"
  node_client "$(dirname "$0")/forced_tools.mjs" "$VKLLM_URL" "${spec%%:*}" '{"reasoning_effort":"none"}' ||
    fail "tool_choice on ${spec%%:*}"
done
# Llama 4's template (llama4-instruct, as a GGUF with Llama 4's chat template gets it): calls are a
# JSON list [{"name": ...,"parameters": ...}], read from the template like any other.
# Mistral 3's (mistral3-instruct, without PARSER): [TOOL_CALLS]NAME[ARGS]{...} as its template writes.
for t in l4:llama4-instruct m3:mistral3-instruct; do
  req=$(jq -nc --rawfile t "$VKLLM_SOURCE_DIR/server/prompt/templates/${t#*:}.gotmpl" --arg m "${t%%:*}" \
    '{model:$m, from:"tiny", template:$t, stream:false}')
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create ${t%%:*}: $(body)"
  node_client "$(dirname "$0")/forced_tools.mjs" "$VKLLM_URL" "${t%%:*}" || fail "tool_choice on ${t#*:}"
done
pass "tool_choice in Mistral's (parser and template), Qwen's (qwen3-coder, qwen3.5), Gemma 4's, LFM2's and Llama 4's call syntaxes"
