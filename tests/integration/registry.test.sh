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
