#!/usr/bin/env bash
# Embeddings and rerank through the real npm `ollama` and `openai` clients against vkllm serve:
# make-model fixtures (nomic-bert embedder, bert cross-encoder) checked against the scalar
# reference (also a Qwen3-Embedding decoder and an EmbeddingGemma with Matryoshka `dimensions`),
# and a generative model refusing embeddings.
source "$(dirname "$0")/lib.sh"

: "${VKLLM_REFERENCE_EMBED:?VKLLM_REFERENCE_EMBED must point at tests/reference_embed}"
vocab=$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-bert-bge.gguf
"$VKLLM_BIN" dev make-model --arch nomic-bert --shape 128x2x4x4 --vocab "$vocab" --seed 11 \
  -o "$TEST_TMP/nomic.gguf" >/dev/null || fail "make-model nomic-bert"
"$VKLLM_BIN" dev make-model --arch bert-rerank --shape 128x2x4x4 --vocab "$vocab" --seed 12 \
  -o "$TEST_TMP/rr.gguf" >/dev/null || fail "make-model bert-rerank"

# Qwen3-Embedding's layout: a causal decoder whose last token's hidden state is the embedding.
"$VKLLM_BIN" dev make-model --arch qwen3-embedding --shape 128x2x4x2 --seed 13 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" \
  -o "$TEST_TMP/q3.gguf" >/dev/null || fail "make-model qwen3-embedding"

# EmbeddingGemma's layout: bidirectional Gemma 3 layers, mean pooling, dense projections. Only on
# the CPU run: its Vulkan path is engine_tests' (here it would add ~25 s of lavapipe pipelines).
models="nomic rr q3"
eg=""
if [[ "${VKLLM_DEVICE:-}" != vulkan* ]]; then
  eg="$TEST_TMP/eg.gguf"
  models="$models eg"
  "$VKLLM_BIN" dev make-model --arch gemma-embedding --shape 128x2x4x2 --seed 14 \
    --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" \
    -o "$eg" >/dev/null || fail "make-model gemma-embedding"
fi

vkllm_start
for m in $models; do
  printf 'FROM %s\n' "$TEST_TMP/$m.gguf" >"$TEST_TMP/Modelfile.$m"
  "$VKLLM_BIN" create "$m" -f "$TEST_TMP/Modelfile.$m" >/dev/null 2>&1 || fail "vkllm create $m"
done
printf 'FROM %s\n' "$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf" >"$TEST_TMP/Modelfile.tiny"
"$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile.tiny" >/dev/null 2>&1 || fail "vkllm create tiny"

node_client "$(dirname "$0")/npm_embed.mjs" "$VKLLM_URL" "$VKLLM_REFERENCE_EMBED" \
  "$TEST_TMP/nomic.gguf" "$TEST_TMP/rr.gguf" "$TEST_TMP/q3.gguf" "$eg" ||
  fail "npm embedding checks"
pass "npm ollama/openai embeddings and rerank"
