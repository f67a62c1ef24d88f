#!/usr/bin/env bash
# The server on the CPU backend: VKLLM_DEVICE=cpu serves the fixture model with the same greedy
# text as Vulkan (lavapipe, VKLLM_DEVICE=vulkan), /api/ps reports it as Ollama reports a CPU
# model (size_vram 0, size = weights + KV), and a machine with no Vulkan driver at all picks the
# CPU backend by itself, generates, and embeds (encoders run on the CPU backend too).
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" >"$TEST_TMP/Modelfile.tiny"
weights=$(stat -c %s "$gguf")

greq='{"model":"tiny","prompt":"The quick brown fox","stream":false,"options":{"temperature":0,"num_predict":16}}'
# greedy NAME [env...]: starts a server, creates tiny, prints its greedy text to $TEST_TMP/NAME.txt
greedy() {
  local name=$1
  vkllm_start "$@"
  "$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile.tiny" >/dev/null 2>&1 || fail "create tiny ($name)"
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$greq")" 200 "generate ($name): $(body)"
  jq -e '.done_reason == "length" and .eval_count == 16' "$TEST_TMP/body" >/dev/null ||
    fail "generate ($name): $(body)"
  jq -j .response "$TEST_TMP/body" >"$TEST_TMP/$name.txt"
}

greedy cpu VKLLM_DEVICE=cpu
grep -q 'models run on CPU backend (VKLLM_DEVICE=cpu' "$VKLLM_LOG" || fail "no CPU backend line in the log"
grep -q 'loaded tiny:latest .* on the CPU' "$VKLLM_LOG" || fail "the model did not load on the CPU"
curl -s "$VKLLM_URL/api/ps" >"$TEST_TMP/ps.json"
jq -e --argjson w "$weights" '.models | length == 1 and .[0].name == "tiny:latest"
       and .[0].size_vram == 0 and .[0].size > ($w / 2)' "$TEST_TMP/ps.json" >/dev/null ||
  fail "ps on the CPU: $(cat "$TEST_TMP/ps.json")"
# The CLI shows it as Ollama shows a CPU model.
"$VKLLM_BIN" ps | grep -q '100% CPU' || fail "vkllm ps: $("$VKLLM_BIN" ps)"
pass "VKLLM_DEVICE=cpu serves on the CPU backend; /api/ps size_vram 0"
vkllm_stop "$VKLLM_PID"

greedy vulkan VKLLM_DEVICE=vulkan
grep -q 'models run on Vulkan (VKLLM_DEVICE=vulkan' "$VKLLM_LOG" || fail "no Vulkan line in the log"
jq -e '.models[0].size_vram == 0' <(curl -s "$VKLLM_URL/api/ps") >/dev/null ||
  fail "lavapipe is a CPU device too: size_vram must be 0"
[ -s "$TEST_TMP/cpu.txt" ] || fail "empty generation on the CPU"
expect_eq "$(cat "$TEST_TMP/cpu.txt")" "$(cat "$TEST_TMP/vulkan.txt")" \
  "greedy text on the CPU backend equals lavapipe's"
pass "the CPU backend and Vulkan generate the same greedy text"
vkllm_stop "$VKLLM_PID"

# No Vulkan driver at all (a loader with no ICD): the CPU backend is chosen automatically.
greedy nodriver VK_DRIVER_FILES=/nonexistent/icd.json VK_ICD_FILENAMES=/nonexistent/icd.json VKLLM_DEVICE=
grep -q 'models run on CPU backend (no GPU; no Vulkan device' "$VKLLM_LOG" ||
  fail "no automatic CPU choice in the log: $(head -3 "$VKLLM_LOG")"
expect_eq "$(cat "$TEST_TMP/nodriver.txt")" "$(cat "$TEST_TMP/cpu.txt")" "same text without a driver"
"$VKLLM_BIN" dev make-model --arch nomic-bert --shape 128x2x4x4 --seed 11 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-bert-bge.gguf" -o "$TEST_TMP/nomic.gguf" \
  >/dev/null || fail "make-model nomic-bert"
printf 'FROM %s\n' "$TEST_TMP/nomic.gguf" >"$TEST_TMP/Modelfile.nomic"
"$VKLLM_BIN" create nomic -f "$TEST_TMP/Modelfile.nomic" >/dev/null 2>&1 || fail "create nomic"
# Encoders run on the CPU backend too: one unit-norm vector of the model's width.
expect_eq "$(http_status POST "$VKLLM_URL/api/embed" -d '{"model":"nomic","input":"hello"}')" 200 \
  "embedding without a Vulkan device: $(body)"
jq -e '(.embeddings | length) == 1 and (.embeddings[0] | length) == 128 and
  ((.embeddings[0] | map(. * .) | add) - 1 | fabs) < 1e-3' "$TEST_TMP/body" >/dev/null ||
  fail "embedding on the CPU backend: $(body)"
# Generation still runs beside it.
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$greq")" 200 "generate after embedding"
pass "no Vulkan driver: CPU backend by itself; embedding models run on the CPU"
