#!/usr/bin/env bash
# /api/create with `quantize` (issue 40 item 6): the shared F16 reference model quantized to Q8_0
# (through the API, with Ollama's progress lines) and Q4_K_M (through `vkllm create -q`) gives,
# tensor for tensor, the bytes llama.cpp's llama-quantize wrote into ref-llama-q8_0.gguf and
# ref-llama-q4_k_m.gguf (made from that F16 file); the result chats; FROM an installed model
# quantizes its weights too; an unknown type and an already-quantized source are refused with
# Ollama's errors and leave no blob behind.
source "$(dirname "$0")/lib.sh"

models=$VKLLM_SHARED_DIR/testdata/models
f16=$models/ref-llama-f16.gguf
template=$'{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:'

# same_tensors A B: every tensor of GGUF B is in A with the same type, shape and bytes.
same_tensors() {
  python3 - "$1" "$2" <<'EOF' || fail "tensors of $1 differ from $2"
import struct, sys

def tensors(path):
    data = open(path, "rb").read()
    pos = 0
    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]
    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode()
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    def skip(t):
        nonlocal pos
        if t == 8:
            string()
        elif t == 9:
            at, n = take("I"), take("Q")
            for _ in range(n):
                skip(at)
        else:
            pos += sizes[t]
    assert take("I") == 0x46554747
    take("I")
    n_tensors, n_kv = take("Q"), take("Q")
    align = 32
    for _ in range(n_kv):
        key, t = string(), take("I")
        if key == "general.alignment":
            align = struct.unpack_from("<I", data, pos)[0]
        skip(t)
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    start = (pos + align - 1) // align * align
    offsets = sorted(o for *_, o in infos) + [len(data) - start]
    out = {}
    for name, dims, t, off in infos:
        end = min(o for o in offsets if o > off)
        out[name] = (t, dims, data[start + off:start + end])
    return out

got, want = tensors(sys.argv[1]), tensors(sys.argv[2])
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for name, (t, dims, raw) in want.items():
    g = got[name]
    assert (g[0], g[1]) == (t, dims), f"{name}: type/shape {g[:2]} != {(t, dims)}"
    # The data of the last tensor may carry different padding: compare the common length.
    n = min(len(raw), len(g[2]))
    assert g[2][:n] == raw[:n], f"{name}: bytes differ"
print(f"{len(want)} tensors identical")
EOF
}

# weights NAME FILE: the model's weights blob, as the server's OCI view serves it.
weights() {
  local digest
  digest=$(curl -s "$VKLLM_URL/v2/library/$1/manifests/latest" |
    jq -r '.layers[] | select(.mediaType == "application/vnd.ollama.image.model") | .digest')
  [ -n "$digest" ] || fail "no weights layer in $1's manifest"
  curl -s -o "$2" "$VKLLM_URL/v2/library/$1/blobs/$digest"
  echo "$digest"
}

vkllm_start
digest=sha256:$(sha256sum "$f16" | cut -d' ' -f1)
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$digest" --data-binary "@$f16")" 201 "upload the F16 model"

# --- Q8_0 through the API, streamed: Ollama's progress lines ---
req=$(jq -nc --arg d "$digest" --arg t "$template" '{model:"ref-q8",files:{"ref.gguf":$d},template:$t,quantize:"q8_0"}')
curl -s "$VKLLM_URL/api/create" -d "$req" >"$TEST_TMP/q8.ndjson"
jq -e -s '(map(select(.status == "quantizing F16 model to Q8_0")) as $q
           | ($q | length) >= 3 and all($q[]; .digest == "0000000000000000000" and .total > 30000000)
             and ($q | map(.completed) | . == sort) and $q[-1].completed == $q[-1].total)
          and any(.[]; .status == "verifying conversion") and .[-1].status == "success"' \
  "$TEST_TMP/q8.ndjson" >/dev/null || fail "quantize progress: $(head -c 1500 "$TEST_TMP/q8.ndjson")"
q8_digest=$(weights ref-q8 "$TEST_TMP/q8.gguf")
same_tensors "$TEST_TMP/q8.gguf" "$models/ref-llama-q8_0.gguf"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"ref-q8"}')" 200 "show ref-q8"
expect_eq "$(jq -r .details.quantization_level "$TEST_TMP/body")" Q8_0 "quantization level"
pass "quantize q8_0: progress lines, tensors identical to llama.cpp's ref-llama-q8_0.gguf"

# --- Q4_K_M through the CLI (`vkllm create -q`, as `ollama create --quantize`) ---
printf 'FROM %s\nTEMPLATE """%s"""\n' "$f16" "$template" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create ref-q4 -q Q4_K_M -f "$TEST_TMP/Modelfile" >"$TEST_TMP/cli.out" 2>&1 ||
  fail "vkllm create -q: $(cat "$TEST_TMP/cli.out")"
weights ref-q4 "$TEST_TMP/q4.gguf" >/dev/null
same_tensors "$TEST_TMP/q4.gguf" "$models/ref-llama-q4_k_m.gguf"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"ref-q4"}')" 200 "show ref-q4"
expect_eq "$(jq -r .details.quantization_level "$TEST_TMP/body")" Q4_K_M "quantization level"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d '{"model":"ref-q4","messages":[{"role":"user","content":"The quick brown fox"}],"stream":false,"options":{"temperature":0,"num_predict":6}}')" 200 "chat with the quantized model: $(body)"
jq -e '.eval_count == 6 and (.message.content | length) > 0' "$TEST_TMP/body" >/dev/null || fail "chat: $(body)"
pass "vkllm create -q Q4_K_M: tensors identical to llama.cpp's ref-llama-q4_k_m.gguf; it chats"

# --- FROM an installed F16 model: the same Q8_0 weights, deterministically ---
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$(jq -nc --arg d "$digest" '{model:"ref-f16",files:{"ref.gguf":$d},stream:false}')")" 200 "create ref-f16"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"ref-q8b","from":"ref-f16","quantize":"Q8_0","stream":false}')" 200 "quantize FROM a model: $(body)"
expect_eq "$(weights ref-q8b "$TEST_TMP/q8b.gguf")" "$q8_digest" "FROM ref-f16 quantizes to the same blob"
pass "quantize FROM an installed model"

# --- errors: Ollama's texts, and nothing left behind ---
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"x","from":"ref-f16","quantize":"q3_K_X","stream":false}')" 400 "unknown type"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "unsupported quantization type Q3_K_X - supported types are F32, F16, BF16, Q4_K_S, Q4_K_M, Q5_K_M, Q6_K, Q8_0" "unknown type text"
q8src=sha256:$(sha256sum "$models/ref-llama-q8_0.gguf" | cut -d' ' -f1)
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$q8src" --data-binary "@$models/ref-llama-q8_0.gguf")" 201 "upload a Q8_0 model"
store_files() { find "$TEST_TMP/server/models" -type f -not -name 'catalog.db*' | sort; }
blobs_before=$(store_files)
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$(jq -nc --arg d "$q8src" '{model:"y",files:{"q.gguf":$d},quantize:"q4_K_M",stream:false}')")" 400 "already quantized"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "quantization is only supported for F16, BF16 and F32 models" "already quantized text"
expect_eq "$(store_files)" "$blobs_before" "no file left behind"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"y"}')" 404 "no model y"
pass "unknown type and an already-quantized source: 400 with Ollama's texts, nothing written"
