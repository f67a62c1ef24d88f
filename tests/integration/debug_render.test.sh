#!/usr/bin/env bash
# Prompt rendering through the real binary: `vkllm debug render` reproduces every case of Ollama's
# template test data byte for byte (compat §5.7), renders generate bodies (suffix, images, raw),
# and reads an installed model's layers; /api/create rejects a TEMPLATE that does not parse and
# autodetects the named template of a GGUF's tokenizer.chat_template (compat §1.14, §5.6).
source "$(dirname "$0")/lib.sh"

V=$VKLLM_BIN
T=$VKLLM_SHARED_DIR/testdata/ollama-templates
[ -d "$T/testdata" ] || fail "template test data missing at $T"

# --- every golden case through the CLI ---
req=$TEST_TMP/req.json
cases=0
for dir in "$T"/testdata/*.gotmpl; do
  name=$(basename "$dir" .gotmpl)
  for case_file in "$dir"/*; do
    c=$(basename "$case_file")
    jq -n --arg c "$c" '
      [ (if ($c | startswith("system-")) then {role:"system",content:"You are a helpful assistant."} else empty end),
        {role:"user",content:"Hello, how are you?"},
        (if ($c | endswith("user-assistant-user")) then
          {role:"assistant",content:"I'\''m doing great. How can I help you today?"},
          {role:"user",content:"I'\''d like to show off how chat templating works!"} else empty end) ]
      | {model:"x", messages: .}' >"$req"
    "$V" debug render --template "$T/$name.gotmpl" --request "$req" >"$TEST_TMP/got" \
      || fail "debug render $name/$c"
    case $name in chatqa | llama2-chat | mistral-instruct | openchat | vicuna)
      # Ollama's own test strips one trailing space from these templates' output.
      python3 -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b[:-1] if b.endswith(b" ") and not b.endswith(b"  ") else b)' "$TEST_TMP/got" ;;
    esac
    cmp -s "$TEST_TMP/got" "$case_file" || fail "$name/$c differs: $(diff <(od -c "$case_file") <(od -c "$TEST_TMP/got") | head -20)"
    cases=$((cases + 1))
  done
done
expect_eq "$cases" 60 "golden case count"
pass "$cases/60 golden cases byte-identical through vkllm debug render"

# --- generate bodies: fill-in-the-middle, images, raw, errors ---
printf '<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>' >"$TEST_TMP/fim.tmpl"
echo '{"model":"x","prompt":"def f(","suffix":"return 1"}' >"$req"
expect_eq "$("$V" debug render --template "$TEST_TMP/fim.tmpl" --request "$req")" "<PRE> def f( <SUF>return 1 <MID>" "suffix mode"
printf '{{ range .Messages }}[{{ .Role }}]{{ .Content }}{{ end }}' >"$TEST_TMP/roles.tmpl"
echo '{"model":"x","prompt":"what is this?","system":"be brief","images":["aGVsbG8=","aGk="]}' >"$req"
expect_eq "$("$V" debug render --template "$TEST_TMP/roles.tmpl" --request "$req")" \
  "[system]be brief[user][img-0][img-1]what is this?" "generate with images"
echo '{"model":"x","prompt":"<raw> text","raw":true}' >"$req"
expect_eq "$("$V" debug render --template "$TEST_TMP/roles.tmpl" --request "$req")" "<raw> text" "raw"
echo '{"model":"x","messages":[{"role":"user","content":"x","images":["not base64!"]}]}' >"$req"
if "$V" debug render --template "$TEST_TMP/roles.tmpl" --request "$req" 2>"$TEST_TMP/err"; then fail "invalid base64 accepted"; fi
grep -q "illegal base64 data at input byte" "$TEST_TMP/err" || fail "base64 error: $(cat "$TEST_TMP/err")"
printf '{{ .Prompt' >"$TEST_TMP/bad.tmpl"
echo '{"model":"x","prompt":"x"}' >"$req"
if "$V" debug render --template "$TEST_TMP/bad.tmpl" --request "$req" 2>"$TEST_TMP/err"; then fail "bad template accepted"; fi
grep -q "template: :1:" "$TEST_TMP/err" || fail "template error: $(cat "$TEST_TMP/err")"
pass "generate bodies and errors"

# --- /api/create: template check and named-template autodetection ---
# A copy of the tiny fixture GGUF with a chatml tokenizer.chat_template added to its metadata.
gguf=$TEST_TMP/chatml.gguf
jinja=$(jq -r '.[1].template' "$T/index.json")
python3 - "$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf" "$gguf" "$jinja" <<'PY'
import struct, sys
src, dst, tmpl = sys.argv[1], sys.argv[2], sys.argv[3]
b = open(src, "rb").read()
pos = 0
def take(n):
    global pos
    pos += n
    return b[pos - n:pos]
def u32(): return struct.unpack("<I", take(4))[0]
def u64(): return struct.unpack("<Q", take(8))[0]
sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip_value(t):
    if t == 8: take(u64())
    elif t == 9:
        et, n = u32(), u64()
        for _ in range(n): skip_value(et)
    else: take(sizes[t])
assert take(4) == b"GGUF"
version = u32(); n_tensors = u64(); n_kv = u64()
kv_start = pos
alignment = 32
for _ in range(n_kv):
    key = take(u64()).decode(); t = u32(); vstart = pos; skip_value(t)
    if key == "general.alignment": alignment = struct.unpack("<I", b[vstart:vstart + 4])[0]
kv_end = pos
for _ in range(n_tensors):
    take(u64()); nd = u32(); take(8 * nd); take(4); take(8)
infos_end = pos
data_start = (infos_end + alignment - 1) // alignment * alignment
key = b"tokenizer.chat_template"; val = tmpl.encode()
kv = struct.pack("<Q", len(key)) + key + struct.pack("<I", 8) + struct.pack("<Q", len(val)) + val
head = b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv + 1) + b[kv_start:kv_end] + kv + b[kv_end:infos_end]
head += b"\0" * ((-len(head)) % alignment)
open(dst, "wb").write(head + b[data_start:])
PY
digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)
vkllm_start
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$digest" --data-binary @"$gguf")" 201 "upload GGUF"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"bad-tmpl\",\"files\":{\"m.gguf\":\"$digest\"},\"template\":\"{{ .Prompt\",\"stream\":false}")" 400 "unparsable TEMPLATE"
jq -r .error "$TEST_TMP/body" | grep -q '^template error: template: :1:' || fail "template error body: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"bad-mf","modelfile":"FROM tiny\nTEMPLATE {{ if .Prompt }}","stream":false}')" 400 "unparsable Modelfile TEMPLATE"
jq -r .error "$TEST_TMP/body" | grep -q '^template error: template: :1:' || fail "Modelfile template error body: $(body)"
curl -s "$VKLLM_URL/api/create" -d "{\"model\":\"auto\",\"files\":{\"m.gguf\":\"$digest\"},\"parameters\":{\"temperature\":0.7}}" >"$TEST_TMP/create.ndjson"
jq -e -s 'map(.status) | index("using autodetected template chatml") != null and .[-1] == "success"' "$TEST_TMP/create.ndjson" >/dev/null \
  || fail "autodetect status: $(cat "$TEST_TMP/create.ndjson")"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"auto"}')" 200 "show auto"
expect_eq "$(jq -r .template "$TEST_TMP/body")" "$(cat "$VKLLM_SOURCE_DIR/server/prompt/templates/chatml.gotmpl")" "autodetected template layer"
jq -r .parameters "$TEST_TMP/body" | grep -q 'stop *"<|im_start|>"' || fail "named parameters: $(jq -r .parameters "$TEST_TMP/body")"
jq -r .parameters "$TEST_TMP/body" | grep -q 'temperature *0.7' || fail "request parameters: $(jq -r .parameters "$TEST_TMP/body")"
# A request template wins over the detected one.
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"own\",\"files\":{\"m.gguf\":\"$digest\"},\"template\":\"{{ .Prompt }}!\",\"stream\":false}")" 200 "create with own template"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"own"}')" 200 "show own"
expect_eq "$(jq -r .template "$TEST_TMP/body")" "{{ .Prompt }}!" "request template kept"
pass "/api/create template check and autodetection"

# --- debug render --model reads the installed model's layers ---
echo '{"model":"auto","messages":[{"role":"user","content":"hi"}]}' >"$req"
expect_eq "$(OLLAMA_MODELS=$TEST_TMP/server/models "$V" debug render --model auto --request "$req" | od -c | head -c 2000)" \
  "$(printf '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' | od -c | head -c 2000)" "render --model"
pass "debug render --model"
