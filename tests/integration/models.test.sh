#!/usr/bin/env bash
# Model management through the real server and CLI: create from a GGUF, list/show/cp/rm, blob
# uploads, bad input (names, digests, paths, JSON) → 400/404, never 500.
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
[ -f "$gguf" ] || fail "fixture $gguf missing"
gguf_digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)

vkllm_start
V=$VKLLM_BIN

# --- create from a Modelfile whose FROM is a local file (uploaded through /api/blobs) ---
mkdir -p "$TEST_TMP/mf"
cp "$gguf" "$TEST_TMP/mf/tiny.gguf"
cat >"$TEST_TMP/mf/Modelfile" <<'MF'
FROM ./tiny.gguf
PARAMETER temperature 0.5
PARAMETER stop "<|end|>"
PARAMETER stop "</s>"
SYSTEM You are a tiny test model.
TEMPLATE """{{ .System }} USER: {{ .Prompt }} ASSISTANT:"""
LICENSE MIT test license
MESSAGE user hello
MESSAGE assistant hi there
MF
"$V" create tiny -f "$TEST_TMP/mf/Modelfile" >"$TEST_TMP/create.out" 2>&1 || { cat "$TEST_TMP/create.out"; fail "vkllm create"; }
grep -q success "$TEST_TMP/create.out" || fail "create did not report success: $(cat "$TEST_TMP/create.out")"
expect_eq "$(http_status HEAD "$VKLLM_URL/api/blobs/$gguf_digest")" 200 "uploaded GGUF blob present"
pass "vkllm create -f Modelfile"

# --- /api/tags and vkllm list ---
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 200 "GET /api/tags"
jq -e '.models | length == 1' "$TEST_TMP/body" >/dev/null || fail "tags: $(body)"
jq -e '.models[0] | .name == "tiny:latest" and .model == "tiny:latest"
        and (.digest | test("^[0-9a-f]{64}$")) and .size > 1700000
        and .details.format == "gguf" and .details.family == "llama"
        and .details.parent_model == "" and (.details.families == ["llama"])
        and (.details.quantization_level | length > 0) and (.details.parameter_size | length > 0)
        and (.modified_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T"))
        and (.capabilities | index("completion") != null)' "$TEST_TMP/body" >/dev/null \
  || fail "tags entry: $(body)"
tags_digest=$(jq -r '.models[0].digest' "$TEST_TMP/body")
"$V" list >"$TEST_TMP/list.out" || fail "vkllm list"
grep -q "^NAME" "$TEST_TMP/list.out" || fail "list header: $(cat "$TEST_TMP/list.out")"
grep -q "^tiny:latest *${tags_digest:0:12} " "$TEST_TMP/list.out" || fail "list row: $(cat "$TEST_TMP/list.out")"
pass "/api/tags and vkllm list"

# --- /api/show and vkllm show ---
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"tiny"}')" 200 "show"
jq -e '.model_info["general.architecture"] == "llama"
        and (.model_info | type == "object")
        and (.model_info["tokenizer.ggml.tokens"] == [])
        and .system == "You are a tiny test model."
        and (.template | contains("ASSISTANT:"))
        and (.parameters | test("temperature +0.5"))
        and (.parameters | contains("stop"))
        and .license == "MIT test license"
        and .messages == [{"role":"user","content":"hello"},{"role":"assistant","content":"hi there"}]
        and (.modelfile | test("FROM /"))
        and (.tensors | length > 0)
        and .details.family == "llama"' "$TEST_TMP/body" >/dev/null || fail "show: $(body | head -c 2000)"
http_status POST "$VKLLM_URL/api/show" -d '{"name":"TINY:latest","verbose":true}' >/dev/null
jq -e '.model_info["tokenizer.ggml.tokens"] | length == 32000' "$TEST_TMP/body" >/dev/null \
  || fail "verbose show (legacy name field, case-insensitive lookup)"
"$V" show tiny >"$TEST_TMP/show.out" || fail "vkllm show"
grep -q "architecture *llama" "$TEST_TMP/show.out" || fail "show output: $(cat "$TEST_TMP/show.out")"
expect_eq "$("$V" show tiny --system)" "You are a tiny test model." "show --system"
expect_eq "$("$V" show tiny --license)" "MIT test license" "show --license"
"$V" show tiny --template | grep -q 'ASSISTANT:' || fail "show --template"
"$V" show tiny --parameters | grep -q 'temperature' || fail "show --parameters"
"$V" show tiny --modelfile >"$TEST_TMP/saved.Modelfile" || fail "show --modelfile"
grep -q '^FROM /' "$TEST_TMP/saved.Modelfile" || fail "modelfile FROM: $(cat "$TEST_TMP/saved.Modelfile")"
pass "/api/show and vkllm show"

# A Modelfile saved by show re-creates the model without re-uploading (FROM is a blob path).
"$V" create tiny-saved -f "$TEST_TMP/saved.Modelfile" >/dev/null 2>&1 || fail "create from saved Modelfile"
http_status POST "$VKLLM_URL/api/show" -d '{"model":"tiny-saved"}' >/dev/null
jq -e '.system == "You are a tiny test model."' "$TEST_TMP/body" >/dev/null || fail "saved Modelfile lost SYSTEM"
pass "create from show --modelfile"

# A FROM naming a blob store's file (sha256-<hex>, or .zst when stored compressed) is taken by
# its digest when the server holds that blob: these files hold junk, and are never uploaded.
hex=${gguf_digest#sha256:}
upper=$(echo "$hex" | tr 'a-f' 'A-F')
mkdir -p "$TEST_TMP/byname"
for f in "sha256-$hex" "sha256-$hex.zst" "sha256-$upper"; do echo "not a gguf" >"$TEST_TMP/byname/$f"; done
for f in "sha256-$hex" "sha256-$hex.zst"; do
  printf 'FROM %s\n' "$TEST_TMP/byname/$f" >"$TEST_TMP/byname.Modelfile"
  "$V" create tiny-byname -f "$TEST_TMP/byname.Modelfile" >"$TEST_TMP/byname.out" 2>&1 \
    || fail "create from blob file name $f: $(cat "$TEST_TMP/byname.out")"
done
printf 'FROM %s\n' "$TEST_TMP/byname/sha256-$upper" >"$TEST_TMP/byname.Modelfile"
"$V" create tiny-upper -f "$TEST_TMP/byname.Modelfile" >"$TEST_TMP/byname.out" 2>&1 \
  && fail "an upper-case blob name was taken for a digest"
"$V" rm tiny-byname >/dev/null || fail "rm tiny-byname"
pass "create from a blob file name (plain and .zst) by digest"

# --- cp and rm ---
"$V" cp tiny copy-of-tiny | grep -q "copied 'tiny' to 'copy-of-tiny'" || fail "vkllm cp"
http_status GET "$VKLLM_URL/api/tags" >/dev/null
expect_eq "$(jq -r '.models[] | select(.name=="copy-of-tiny:latest") | .digest' "$TEST_TMP/body")" "$tags_digest" "copy keeps manifest digest"
expect_eq "$(http_status POST "$VKLLM_URL/api/copy" -d '{"source":"missing","destination":"x"}')" 404 "copy missing"
expect_eq "$(jq -r .error "$TEST_TMP/body")" 'model "missing" not found' "copy missing message"
"$V" rm copy-of-tiny | grep -q "deleted 'copy-of-tiny'" || fail "vkllm rm"
expect_eq "$(http_status DELETE "$VKLLM_URL/api/delete" -d '{"model":"copy-of-tiny"}')" 404 "delete twice"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "model 'copy-of-tiny' not found" "delete missing message"
expect_eq "$(http_status HEAD "$VKLLM_URL/api/blobs/$gguf_digest")" 200 "shared blob survives deleting one name"
if "$V" rm nothing-here 2>"$TEST_TMP/rm.err"; then fail "rm of a missing model succeeded"; fi
grep -q "not found" "$TEST_TMP/rm.err" || fail "rm error: $(cat "$TEST_TMP/rm.err")"
pass "cp and rm"

# --- blobs ---
printf 'hello blob' >"$TEST_TMP/blob.txt"
good=sha256:$(sha256sum "$TEST_TMP/blob.txt" | cut -d' ' -f1)
bad=sha256:$(printf 'other' | sha256sum | cut -d' ' -f1)
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$bad" --data-binary @"$TEST_TMP/blob.txt")" 400 "wrong digest upload"
jq -r .error "$TEST_TMP/body" | grep -q "digest mismatch" || fail "mismatch message: $(body)"
expect_eq "$(http_status HEAD "$VKLLM_URL/api/blobs/$bad")" 404 "nothing kept after mismatch"
[ -z "$(find "$TEST_TMP/server/models" -name "*${bad#sha256:}*")" ] || fail "mismatched blob left a file"
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$good" --data-binary @"$TEST_TMP/blob.txt")" 201 "upload"
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$good" --data-binary @"$TEST_TMP/blob.txt")" 200 "upload again"
expect_eq "$(http_status HEAD "$VKLLM_URL/api/blobs/$good")" 200 "HEAD uploaded blob"
expect_eq "$(http_status HEAD "$VKLLM_URL/api/blobs/sha256:1234")" 400 "short digest"
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/sha256:..%2F..%2Fetc%2Fpasswd" -d x)" 400 "traversal digest"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "invalid digest format" "traversal digest message"
pass "blob upload, mismatch, HEAD"

# --- bad input never 500 ---
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{bad json')" 400 "bad JSON"
expect_eq "$(http_status POST "$VKLLM_URL/api/show")" 400 "empty body"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "missing request body" "empty body message"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{}')" 400 "show without model"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "model is required" "show without model message"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"nope"}')" 404 "show unknown"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "model 'nope:latest' not found" "show unknown message"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":5}')" 400 "model of wrong type"
for name in '../../etc/passwd' 'a//b' 'x:' '../x:latest' 'a/b/c/d/e' 'bad name' '.hidden' 'x:../../y'; do
  expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d "{\"model\":\"$name\"}")" 400 "show '$name'"
  expect_eq "$(http_status POST "$VKLLM_URL/api/pull" -d "{\"model\":\"$name\",\"stream\":false}")" 400 "pull '$name'"
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"$name\",\"files\":{\"a.gguf\":\"$gguf_digest\"}}")" 400 "create '$name'"
  expect_eq "$(http_status POST "$VKLLM_URL/api/copy" -d "{\"source\":\"tiny\",\"destination\":\"$name\"}")" 400 "copy to '$name'"
  expect_eq "$(http_status DELETE "$VKLLM_URL/api/delete" -d "{\"model\":\"$name\"}")" 400 "delete '$name'"
done
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"t2\",\"files\":{\"../a.gguf\":\"$gguf_digest\"}}")" 400 "create path traversal"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "file path must be relative" "create path message"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"t2","files":{"a.gguf":"sha256:../../x"}}')" 400 "create bad digest"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"t2"}')" 400 "create without from/files"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "neither 'from' or 'files' was specified" "create without from/files message"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"t2\",\"files\":{\"blob.txt\":\"$good\"},\"stream\":false}")" 400 "create from a non-GGUF blob"
expect_eq "$(http_status POST "$VKLLM_URL/api/push" -d '{"model":"","stream":false}')" 400 "push without model"
! grep -q '| 500 |' "$VKLLM_LOG" || fail "a request got 500: $(grep '| 500 |' "$VKLLM_LOG")"
pass "bad input answers 400/404, never 500"

# --- JSON create (Ollama's current form), stream:false answers one object ---
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"json-made\",\"files\":{\"tiny.gguf\":\"$gguf_digest\"},\"system\":\"sys\",\"parameters\":{\"num_ctx\":64,\"stop\":[\"a\",\"b\"]},\"license\":[\"L1\",\"L2\"],\"stream\":false}")" 200 "JSON create"
expect_eq "$(jq -c . "$TEST_TMP/body")" '{"status":"success"}' "create stream:false body"
http_status POST "$VKLLM_URL/api/show" -d '{"model":"json-made"}' >/dev/null
jq -e '.system == "sys" and .license == "L1\nL2" and (.parameters | test("num_ctx +64"))' "$TEST_TMP/body" >/dev/null \
  || fail "JSON-created model: $(body | head -c 600)"
# derived from another model: parent_model and the source's layers
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"derived","from":"json-made","system":"new sys","stream":false}')" 200 "create from"
http_status POST "$VKLLM_URL/api/show" -d '{"model":"derived"}' >/dev/null
jq -e '.system == "new sys" and .license == "L1\nL2"' "$TEST_TMP/body" >/dev/null || fail "derived model: $(body | head -c 600)"
# streamed create: NDJSON lines ending in success
curl -s "$VKLLM_URL/api/create" -d "{\"model\":\"streamed\",\"files\":{\"tiny.gguf\":\"$gguf_digest\"}}" >"$TEST_TMP/create.ndjson"
jq -e -s 'length >= 3 and .[-1].status == "success" and (map(.status) | index("parsing GGUF") != null)' "$TEST_TMP/create.ndjson" >/dev/null \
  || fail "create stream: $(cat "$TEST_TMP/create.ndjson")"
# legacy modelfile string
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"legacy","modelfile":"FROM tiny\nSYSTEM legacy sys","stream":false}')" 200 "legacy modelfile create"
http_status POST "$VKLLM_URL/api/show" -d '{"model":"legacy"}' >/dev/null
jq -e '.system == "legacy sys"' "$TEST_TMP/body" >/dev/null || fail "legacy create: $(body | head -c 400)"
pass "JSON, derived, streamed and legacy create"
