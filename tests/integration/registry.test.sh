#!/usr/bin/env bash
# Push and pull through a real docker-registry, and one vkllm pulling from another's /v2/ view:
# bytes must arrive unchanged (same manifest digest, same blob bytes as the fixture).
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
gguf_hex=$(sha256sum "$gguf" | cut -d' ' -f1)
command -v docker-registry >/dev/null || fail "docker-registry missing (scripts/setup installs it)"
read -r reg_port _ < <(bash "$VKLLM_SOURCE_DIR/tests/support/start-registry.sh" "$TEST_TMP/registry" $$)
[ -n "$reg_port" ] || fail "docker-registry did not start"
trap 'bash "$VKLLM_SOURCE_DIR/tests/support/stop-registry.sh" "$TEST_TMP/registry" >/dev/null 2>&1 || true; _vkllm_cleanup' EXIT
REG=127.0.0.1:$reg_port

# Server A: create and push.
vkllm_start a
A_URL=$VKLLM_URL A_HOST=$OLLAMA_HOST
printf 'FROM %s\nSYSTEM pushed system\nPARAMETER top_k 7\n' "$gguf" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create on A"
"$VKLLM_BIN" cp tiny "$REG/test/tiny:v1" >/dev/null || fail "cp to registry name"
"$VKLLM_BIN" push "$REG/test/tiny:v1" >"$TEST_TMP/push.out" 2>&1 || { cat "$TEST_TMP/push.out"; fail "vkllm push"; }
grep -q success "$TEST_TMP/push.out" || fail "push output: $(cat "$TEST_TMP/push.out")"
a_digest=$(curl -s "$A_URL/api/tags" | jq -r ".models[] | select(.name==\"$REG/test/tiny:v1\") | .digest")
[ ${#a_digest} = 64 ] || fail "no digest for pushed model on A"
# the registry now serves the same manifest bytes
reg_digest=$(curl -s -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
  "http://$REG/v2/test/tiny/manifests/v1" | sha256sum | cut -d' ' -f1)
expect_eq "$reg_digest" "$a_digest" "registry manifest digest"
pass "vkllm push to docker-registry"

# Server B (fresh store): pull through the API (NDJSON), then compare bytes.
vkllm_start b
B_URL=$VKLLM_URL
curl -s "$B_URL/api/pull" -d "{\"model\":\"$REG/test/tiny:v1\"}" >"$TEST_TMP/pull.ndjson"
jq -e -s '.[0].status == "pulling manifest" and .[-1].status == "success"
          and (map(select(.digest != null)) | length > 0)' "$TEST_TMP/pull.ndjson" >/dev/null \
  || fail "pull stream: $(cat "$TEST_TMP/pull.ndjson")"
b_digest=$(curl -s "$B_URL/api/tags" | jq -r '.models[0].digest')
expect_eq "$b_digest" "$a_digest" "pulled manifest digest"
curl -s "$B_URL/v2/test/tiny/blobs/sha256:$gguf_hex" -o "$TEST_TMP/pulled.gguf"
cmp -s "$TEST_TMP/pulled.gguf" "$gguf" || fail "pulled model blob differs from the fixture"
sys=$(curl -s "$B_URL/api/show" -d "{\"model\":\"$REG/test/tiny:v1\"}" | jq -r .system)
expect_eq "$sys" "pushed system" "pulled system layer"
pass "pull from docker-registry into a fresh store, bytes identical"

# A pull stores a compressible blob larger than the writer's sample raw (to keep up with the
# wire) and the server compresses it in the background afterwards. The model: the F16 reference
# with 6 MiB of text metadata inserted after the GGUF header (past the sample's 9 frames of 4 MiB;
# the insert is a multiple of 4096 bytes, so the tensor data keeps its alignment).
big=$TEST_TMP/big.gguf
python3 - "$VKLLM_SHARED_DIR/testdata/models/ref-llama-f16.gguf" "$big" <<'PY'
import struct, sys
src = open(sys.argv[1], "rb").read()
key = b"vkllm.test.padding"
fixed = 8 + len(key) + 4 + 8
text = (b"the weights of a model compress when they repeat themselves " * 120000)
text = text[: 6 * 1024 * 1024 - fixed]
kv = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(text)) + text
assert len(kv) % 4096 == 0
magic, version, n_tensors, n_kv = struct.unpack_from("<IIQQ", src)
out = struct.pack("<IIQQ", magic, version, n_tensors, n_kv + 1) + kv + src[24:]
open(sys.argv[2], "wb").write(out)
PY
big_hex=$(sha256sum "$big" | cut -d' ' -f1)
printf 'FROM %s\n' "$big" >"$TEST_TMP/Modelfile.big"
OLLAMA_HOST=$A_HOST "$VKLLM_BIN" create big -f "$TEST_TMP/Modelfile.big" >/dev/null 2>&1 || fail "create big on A"
OLLAMA_HOST=$A_HOST "$VKLLM_BIN" cp big "$REG/test/big:v1" >/dev/null || fail "cp big"
OLLAMA_HOST=$A_HOST "$VKLLM_BIN" push "$REG/test/big:v1" >"$TEST_TMP/pushbig.out" 2>&1 || { cat "$TEST_TMP/pushbig.out"; fail "push big"; }
curl -s "$B_URL/api/pull" -d "{\"model\":\"$REG/test/big:v1\",\"stream\":false}" | jq -e '.status == "success"' >/dev/null \
  || fail "pull big"
blob=$TEST_TMP/b/models/blobs/sha256-$big_hex
blob_row() {
  sqlite3 "$TEST_TMP/b/models/catalog.db" \
    "SELECT encoding || ' ' || size || ' ' || stored_size FROM blobs WHERE digest = 'sha256:$big_hex'"
}
# The file is replaced first, then the row follows.
for i in $(seq 1 300); do [[ $(blob_row) == zstd-seekable* ]] && break; sleep 0.1; done
[ -f "$blob.zst" ] && [ ! -e "$blob" ] || fail "the pulled blob was not recompressed: $(ls -l "$TEST_TMP/b/models/blobs")"
row=$(blob_row)
expect_eq "$row" "zstd-seekable $(stat -c %s "$big") $(stat -c %s "$blob.zst")" "catalog row of the recompressed blob"
# Compressed after the pull committed the model, not while it downloaded.
model_ns=$(sqlite3 "$TEST_TMP/b/models/catalog.db" "SELECT modified_at FROM models WHERE model = 'big'")
zst_ns=$(stat -c %.9Y "$blob.zst" | tr -d .)
[ -n "$model_ns" ] && [ "$zst_ns" -gt "$model_ns" ] || fail "blob compressed before the model was committed ($zst_ns <= $model_ns)"
curl -s "$B_URL/v2/test/big/blobs/sha256:$big_hex" | cmp -s - "$big" || fail "recompressed blob differs"
gen='{"model":"MODEL","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":6}}'
a_text=$(curl -s "$A_URL/api/generate" -d "${gen/MODEL/big}" | jq -r .response)
b_text=$(curl -s "$B_URL/api/generate" -d "${gen/MODEL/$REG/test/big:v1}" | jq -r .response)
[ -n "$a_text" ] && [ "$a_text" != null ] || fail "no generation from the big model on A"
expect_eq "$b_text" "$a_text" "generation from the recompressed blob"
pass "a pulled blob stored raw is recompressed in the background; catalog agrees; model generates"

# CLI pull of an unknown tag: Ollama's exact error text.
if "$VKLLM_BIN" pull "$REG/test/tiny:missing" >"$TEST_TMP/pullmiss.out" 2>&1; then fail "pull of a missing tag succeeded"; fi
grep -q "file does not exist" "$TEST_TMP/pullmiss.out" || fail "missing tag error: $(cat "$TEST_TMP/pullmiss.out")"
expect_eq "$(http_status POST "$B_URL/api/pull" -d "{\"model\":\"$REG/test/tiny:missing\",\"stream\":false}")" 500 "pull missing, stream:false"
jq -r .error "$TEST_TMP/body" | grep -q "pull model manifest: file does not exist" || fail "missing tag message: $(body)"
pass "pull of an unknown tag"

# Server C pulls from server A's read-only /v2/ view (A's local "tiny:latest").
a_port=${A_URL##*:}
vkllm_start c
C_URL=$VKLLM_URL
"$VKLLM_BIN" pull "127.0.0.1:$a_port/library/tiny:latest" >"$TEST_TMP/pullA.out" 2>&1 \
  || { cat "$TEST_TMP/pullA.out"; fail "pull from another vkllm"; }
tiny_a=$(curl -s "$A_URL/api/tags" | jq -r '.models[] | select(.name=="tiny:latest") | .digest')
expect_eq "$(curl -s "$C_URL/api/tags" | jq -r '.models[0].digest')" "$tiny_a" "vkllm-to-vkllm manifest digest"
curl -s "$C_URL/v2/library/tiny/blobs/sha256:$gguf_hex" -o "$TEST_TMP/fromA.gguf"
cmp -s "$TEST_TMP/fromA.gguf" "$gguf" || fail "blob pulled from vkllm differs"
pass "vkllm pulls from another vkllm's /v2/"

# /v2/ view details: Range, HEAD, digest header, unknown names, read-only.
expect_eq "$(http_status GET "$A_URL/v2/")" 200 "GET /v2/"
code=$(curl -s -o "$TEST_TMP/range" -w '%{http_code}' -r 100-199 "$A_URL/v2/library/tiny/blobs/sha256:$gguf_hex")
expect_eq "$code" 206 "ranged blob GET"
cmp -s "$TEST_TMP/range" <(tail -c +101 "$gguf" | head -c 100) || fail "range bytes differ"
hdrs=$(curl -sI "$A_URL/v2/library/tiny/blobs/sha256:$gguf_hex")
echo "$hdrs" | grep -qi "^content-length: $(stat -c %s "$gguf")" || fail "HEAD blob length: $hdrs"
mhdrs=$(curl -s -D - -o /dev/null "$A_URL/v2/library/tiny/manifests/latest")
echo "$mhdrs" | grep -qi "^docker-content-digest: sha256:$tiny_a" || fail "manifest digest header: $mhdrs"
expect_eq "$(http_status GET "$A_URL/v2/library/nope/manifests/latest")" 404 "unknown manifest"
jq -e '.errors[0].code == "MANIFEST_UNKNOWN"' "$TEST_TMP/body" >/dev/null || fail "OCI error shape: $(body)"
expect_eq "$(http_status GET "$A_URL/v2/library/tiny/blobs/sha256:$(printf x | sha256sum | cut -d' ' -f1)")" 404 "unknown blob"
expect_eq "$(http_status GET "$A_URL/v2/library/tiny/blobs/sha256:$gguf_hex" -r 99999999-)" 416 "unsatisfiable range"
expect_eq "$(http_status PUT "$A_URL/v2/library/tiny/manifests/latest" -d '{}')" 405 "read-only view"
pass "/v2/ view: Range, HEAD, errors, read-only"
