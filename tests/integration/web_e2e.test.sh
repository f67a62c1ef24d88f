#!/usr/bin/env bash
# The web UI end to end in real headless Chromium (Debian's chromium, driven by npm
# playwright-core from web/node_modules) against the real server: a seed server creates the
# fixture model through /api/blobs + /api/create and pushes it to a local docker-registry; the UI
# server starts empty and the browser pulls it from the chat page's first-run box (progress to
# 100%), copies and deletes a model, chats (stream, stop, regenerate, edit+resend, reload),
# attaches text, source, PDF and image files (an image answered by a Gemma 3 vision model),
# switches versions of edited and regenerated
# messages, reads maths, watches the context meter, unloads the running model, watches the
# engine view, and sees the server go away and come back. Screenshots go to $VKLLM_WEB_ARTIFACTS (default build/test-artifacts/web).
source "$(dirname "$0")/lib.sh"

chromium=${VKLLM_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || fail "$chromium missing (scripts/setup installs Debian's chromium)"
[ -d "$VKLLM_SOURCE_DIR/web/node_modules/playwright-core" ] \
  || fail "web/node_modules missing: run scripts/setup (npm ci in web/)"
command -v docker-registry >/dev/null || fail "docker-registry missing (scripts/setup installs it)"
gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
[ -f "$gguf" ] || fail "fixture $gguf missing"
artifacts=${VKLLM_WEB_ARTIFACTS:-$(dirname "$VKLLM_BIN")/../test-artifacts/web}
mkdir -p "$artifacts"
artifacts=$(cd "$artifacts" && pwd)

read -r reg_port _ < <(bash "$VKLLM_SOURCE_DIR/tests/support/start-registry.sh" "$TEST_TMP/registry" $$)
[ -n "$reg_port" ] || fail "docker-registry did not start"
trap 'bash "$VKLLM_SOURCE_DIR/tests/support/stop-registry.sh" "$TEST_TMP/registry" >/dev/null 2>&1 || true; _vkllm_cleanup' EXIT
REG=127.0.0.1:$reg_port

# Seed: blob upload + create (with a chat template and a short default reply), push.
vkllm_start seed
digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)
code=$(http_status POST "$VKLLM_URL/api/blobs/$digest" --data-binary @"$gguf")
[ "$code" = 201 ] || fail "blob upload: $code $(body)"
jq -n --arg d "$digest" '{model:"tiny", files:{"tiny.gguf":$d}, stream:false,
    template:"{{ if .System }}{{ .System }} {{ end }}USER: {{ .Prompt }} ASSISTANT:",
    parameters:{num_predict:24, temperature:0.8}}' >"$TEST_TMP/create.json"
code=$(http_status POST "$VKLLM_URL/api/create" --data-binary @"$TEST_TMP/create.json")
[ "$code" = 200 ] || fail "create: $code $(body)"
"$VKLLM_BIN" cp tiny "$REG/test/tiny:v1" >/dev/null || fail "cp to the registry name"
"$VKLLM_BIN" push "$REG/test/tiny:v1" >"$TEST_TMP/push.out" 2>&1 || fail "push: $(cat "$TEST_TMP/push.out")"
vkllm_stop "$VKLLM_PID"

# A vision projector for the browser test: a GGUF that says it is one (general.type mmproj); a
# llama model created with it lists the projector but, with no encoder vkllm runs for it, not
# the vision capability.
python3 - "$TEST_TMP/mmproj.gguf" <<'PY'
import struct, sys
def text(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b
kv = [("general.architecture", "clip"), ("general.type", "mmproj"), ("general.alignment", None)]
out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
for k, v in kv:
    out += text(k) + (struct.pack("<II", 4, 32) if v is None else struct.pack("<I", 8) + text(v))
out += b"\0" * (-len(out) % 32)
open(sys.argv[1], "wb").write(out)
PY

# The UI's server starts with an empty store.
vkllm_start ui
export VKLLM_URL REG VKLLM_PID VKLLM_PORT VKLLM_BIN
export VKLLM_UI_MODELS=$TEST_TMP/ui/models VKLLM_UI_HOME=$TEST_TMP/ui
export VKLLM_WEB_ARTIFACTS=$artifacts VKLLM_CHROMIUM=$chromium
export VKLLM_GGUF=$gguf VKLLM_MMPROJ=$TEST_TMP/mmproj.gguf
# A Gemma 3 model with its projector, whose images the engine runs (issue 38).
"$VKLLM_BIN" dev make-model --arch gemma3 --shape test --type F16 --seed 40 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/gemma3.gguf" --projector "$TEST_TMP/gemma3-mmproj.gguf" --projector-shape test:1 \
  >/dev/null || fail "make-model gemma3"
export VKLLM_G3=$TEST_TMP/gemma3.gguf VKLLM_G3_MMPROJ=$TEST_TMP/gemma3-mmproj.gguf
start=$(date +%s)
node "$VKLLM_SOURCE_DIR/tests/integration/web_e2e.mjs" || fail "browser test"
echo "browser part took $(($(date +%s) - start)) s; screenshots in $artifacts"
