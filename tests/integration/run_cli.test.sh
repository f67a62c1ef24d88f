#!/usr/bin/env bash
# `vkllm run`, `ps` and `stop` against the real server, as `ollama run` is used: a one-shot prompt
# (argument and piped stdin), --verbose timings, the interactive chat in a pseudo-terminal with
# """ multi-line input and /set, /show, /save, /clear, /bye, then ps and stop. Also the exact
# calls the `ollama` CLI makes when pointed at vkllm (compat §8) with curl.
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
vkllm_start
V=$VKLLM_BIN
mkdir -p "$TEST_TMP/mf"
cp "$gguf" "$TEST_TMP/mf/tiny.gguf"
cat >"$TEST_TMP/mf/Modelfile" <<'MF'
FROM ./tiny.gguf
PARAMETER num_predict 6
PARAMETER temperature 0
TEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}
{{ end }}assistant:"""
MF
(cd "$TEST_TMP/mf" && "$V" create tiny -f Modelfile >/dev/null 2>&1) || fail "create"

# One-shot: the answer equals /api/generate's for the same prompt.
want=$(curl -s "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"hello there","stream":false}' | jq -j .response)
got=$("$V" run tiny "hello there" 2>"$TEST_TMP/verbose.txt" </dev/null)
expect_eq "$got" "$want" "vkllm run one-shot output"
got=$(echo "hello there" | "$V" run tiny 2>/dev/null)
expect_eq "$got" "$want" "piped stdin is the prompt"
"$V" run tiny "hello there" --verbose </dev/null >/dev/null 2>"$TEST_TMP/verbose.txt"
grep -q '^eval count: *6 token(s)' "$TEST_TMP/verbose.txt" || fail "--verbose: $(cat "$TEST_TMP/verbose.txt")"
grep -q '^prompt eval rate:' "$TEST_TMP/verbose.txt" || fail "--verbose rates"
pass "vkllm run one-shot, piped, --verbose"

# Interactive, in a pseudo-terminal.
printf '%s\n' 'hi' '"""first line' 'second line"""' '/set parameter num_predict 2' \
  '/set system Be brief.' '/show system' '/show parameters' '/save tiny-saved' '/clear' \
  'again' '/bye' >"$TEST_TMP/session.txt"
script -qec "$V run tiny" /dev/null <"$TEST_TMP/session.txt" >"$TEST_TMP/tty.txt" 2>&1 ||
  fail "interactive run: $(cat "$TEST_TMP/tty.txt")"
tr -d '\r' <"$TEST_TMP/tty.txt" >"$TEST_TMP/tty.clean"
grep -q 'Set parameter .num_predict. to .2.' "$TEST_TMP/tty.clean" || fail "/set parameter: $(cat "$TEST_TMP/tty.clean")"
grep -q 'Be brief.' "$TEST_TMP/tty.clean" || fail "/show system"
grep -q 'num_predict' "$TEST_TMP/tty.clean" || fail "/show parameters"
grep -q "Created new model 'tiny-saved'" "$TEST_TMP/tty.clean" || fail "/save"
grep -q 'Cleared session context' "$TEST_TMP/tty.clean" || fail "/clear"
curl -s "$VKLLM_URL/api/show" -d '{"model":"tiny-saved"}' >"$TEST_TMP/saved.json"
jq -e '.system == "Be brief." and (.parameters | test("num_predict"))
       and (.messages | length) == 4 and .messages[2].content == "first line\nsecond line"' \
  "$TEST_TMP/saved.json" >/dev/null || fail "saved session: $(cat "$TEST_TMP/saved.json")"
pass "interactive: multi-line, /set, /show, /save (history, system, parameters), /clear, /bye"

# ps and stop.
"$V" ps >"$TEST_TMP/ps.txt"
head -1 "$TEST_TMP/ps.txt" | grep -q 'NAME *ID *SIZE *PROCESSOR *CONTEXT *UNTIL' || fail "ps header"
grep -q '^tiny:latest .* 100% CPU .* 4096 .*from now' "$TEST_TMP/ps.txt" || fail "ps row: $(cat "$TEST_TMP/ps.txt")"
"$V" stop tiny || fail "stop"
ps_lines() { "$V" ps | wc -l; }
eventually_eq 1 "no model after stop" ps_lines
"$V" stop nope 2>"$TEST_TMP/stop.err" && fail "stop of an unknown model succeeded"
grep -q "couldn't find model \"nope\" to stop" "$TEST_TMP/stop.err" || fail "stop error: $(cat "$TEST_TMP/stop.err")"
pass "vkllm ps and stop"

# The calls the `ollama` CLI makes (it cannot be installed here): run = HEAD /, show, generate
# (load), chat per turn; stop = show + generate keep_alive 0; ps = GET /api/ps.
expect_eq "$(http_status HEAD "$VKLLM_URL/")" 200 "HEAD /"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"name":"tiny"}')" 200 "show by name"
jq -e '(.capabilities | index("completion")) != null and (.model_info | type) == "object"' "$TEST_TMP/body" >/dev/null ||
  fail "show for run: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"name":"missing"}')" 404 "show 404 triggers ollama run's pull"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","keep_alive":"5m"}')" 200 "load"
curl -s "$VKLLM_URL/api/chat" -d '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"options":{}}' >"$TEST_TMP/chat.ndjson"
jq -e -s '.[-1].done == true and (.[0].message.content | type) == "string"' "$TEST_TMP/chat.ndjson" >/dev/null ||
  fail "chat stream for the CLI"
expect_eq "$(http_status GET "$VKLLM_URL/api/ps")" 200 "ps"
jq -e '.models[0].digest | length >= 12' "$TEST_TMP/body" >/dev/null || fail "ps digest for the CLI's ID column"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","keep_alive":0}')" 200 "stop"
pass "the ollama CLI's calls"
