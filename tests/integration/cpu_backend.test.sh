#!/usr/bin/env bash
# The server on the CPU backend: VKLLM_DEVICE=cpu serves the fixture model with the same greedy
# text as Vulkan (lavapipe, VKLLM_DEVICE=vulkan), /api/ps reports it as Ollama reports a CPU
# model (size_vram 0, size = weights + KV), and a machine with no Vulkan driver at all picks the
# CPU backend by itself, generates, and embeds (encoders run on the CPU backend too). A Gemma 3n
# model created with Gemma 3's chat template (as Ollama's gemma3n models come) chats through
# /api/chat with the same greedy reply on both backends, its prompt rendered as Gemma 3's turns;
# so does a Gemma 4 model created from its GGUF alone (local and global layers of their own head
# sizes, per-layer inputs), its prompt Gemma 4's turns (gemma4-instruct, by its architecture),
# thinking on as Ollama does by default for a template with thinking tags.
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

# A 2-layer Gemma 3n (AltUp, LAuReL, per-layer inputs); this seed's greedy margins under llama.cpp
# are all >= 0.089 on this prompt, far above the backends' differences.
"$VKLLM_BIN" dev make-model --arch gemma3n --shape 64x2x2x1 --seed 51 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" -o "$TEST_TMP/g3n.gguf" \
  >/dev/null || fail "make-model gemma3n"
{
  printf 'FROM %s\nPARAMETER stop "<end_of_turn>"\nTEMPLATE """' "$TEST_TMP/g3n.gguf"
  printf '%s' "$(cat "$VKLLM_SHARED_DIR/testdata/ollama-templates/gemma3-instruct.gotmpl")"
  printf '"""\n'
} >"$TEST_TMP/Modelfile.g3n"
# A 2-layer Gemma 4 (a local layer with heads of 32, a global one with heads of 64, per-layer
# inputs); this seed's greedy margins under llama.cpp on the chat's prompt are all >= 0.084.
"$VKLLM_BIN" dev make-model --arch gemma4 --shape 64x2x2x1 --seed 53 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" -o "$TEST_TMP/g4.gguf" \
  >/dev/null || fail "make-model gemma4"
printf 'FROM %s\n' "$TEST_TMP/g4.gguf" >"$TEST_TMP/Modelfile.g4"
opts='"stream":false,"options":{"temperature":0,"num_predict":8}'
# chat NAME MODEL: creates MODEL (g3n or g4) on the running server and writes [reply, prompt
# tokens] of its greedy chat to $TEST_TMP/NAME-MODEL.json.
chat() {
  local creq='{"model":"'$2'","messages":[{"role":"user","content":"Where do foxes live?"}],'$opts'}'
  "$VKLLM_BIN" create "$2" -f "$TEST_TMP/Modelfile.$2" >/dev/null 2>&1 || fail "create $2 ($1)"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$creq")" 200 "chat $2 ($1): $(body)"
  jq -e '.done_reason == "length" and .eval_count == 8 and (.message.content | length) > 0' \
    "$TEST_TMP/body" >/dev/null || fail "chat $2 ($1): $(body)"
  jq -c '[.message.content, .prompt_eval_count]' "$TEST_TMP/body" >"$TEST_TMP/$1-$2.json"
}
# raw_matches MODEL PROMPT: the same text sent raw generates the Vulkan chat's reply (its prompt
# count is only what the chat did not leave cached).
raw_matches() {
  local rreq
  rreq=$(jq -nc --argjson o "{$opts}" --arg m "$1" --arg p "$2" '{model:$m, raw:true, prompt:$p} + $o')
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$rreq")" 200 "raw $1: $(body)"
  expect_eq "$(jq -c .response "$TEST_TMP/body")" "$(jq -c '.[0]' "$TEST_TMP/vulkan-$1.json")" \
    "$1's chat renders its turns"
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
chat cpu g3n
chat cpu g4
vkllm_stop "$VKLLM_PID"

greedy vulkan VKLLM_DEVICE=vulkan
grep -q 'models run on Vulkan (VKLLM_DEVICE=vulkan' "$VKLLM_LOG" || fail "no Vulkan line in the log"
chat vulkan g3n
chat vulkan g4
grep -q 'loaded g3n:latest .* on the CPU' "$VKLLM_LOG" && fail "g3n loaded on the CPU backend"
grep -q 'loaded g4:latest .* on the CPU' "$VKLLM_LOG" && fail "g4 loaded on the CPU backend"
# The chats' prompts are Gemma 3's and Gemma 4's user and model turns.
raw_matches g3n $'<start_of_turn>user\nWhere do foxes live?<end_of_turn>\n<start_of_turn>model\n'
raw_matches g4 $'<|turn>system\n<|think|>\n<turn|>\n<|turn>user\nWhere do foxes live?<turn|>\n<|turn>model\n'
expect_eq "$(cat "$TEST_TMP/cpu-g3n.json")" "$(cat "$TEST_TMP/vulkan-g3n.json")" \
  "gemma3n's greedy chat on the CPU backend equals lavapipe's"
pass "gemma3n created with Gemma 3's template chats alike on Vulkan and the CPU backend"
expect_eq "$(cat "$TEST_TMP/cpu-g4.json")" "$(cat "$TEST_TMP/vulkan-g4.json")" \
  "gemma4's greedy chat on the CPU backend equals lavapipe's"
pass "gemma4 created from its GGUF chats alike on Vulkan and the CPU backend (Gemma 4's turns, thinking)"
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
