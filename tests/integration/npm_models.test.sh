#!/usr/bin/env bash
# The npm `ollama` client's model management (list/show/create/pull/delete) against vkllm.
source "$(dirname "$0")/lib.sh"

vkllm_start
printf 'FROM %s\n' "$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "vkllm create"
node_client "$(dirname "$0")/npm_models.mjs" "$VKLLM_URL" || fail "npm ollama model management"
pass "npm ollama list/show/create/pull/delete"
