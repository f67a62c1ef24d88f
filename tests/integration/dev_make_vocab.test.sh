#!/usr/bin/env bash
# `vkllm dev make-vocab` writes the Llama 3 tokenizer as a vocab-only GGUF: 128256 tokens with
# the special tokens at 128000+, and it tokenizes llama.cpp's llama-bpe vectors exactly. Bad
# inputs fail with a clear message. `--kind gemma4` writes the committed Gemma 4-style vocabulary,
# which make-model --arch gemma4 uses without --vocab.
set -euo pipefail
: "${VKLLM_BIN:?}" "${VKLLM_SHARED_DIR:?}"
vocab="$VKLLM_SHARED_DIR/testdata/vocab"
source "$(dirname "$0")/lib.sh"
tmp=$TEST_TMP

made="$tmp/llama3-vocab.gguf"
"$VKLLM_BIN" dev make-vocab --encoder "$vocab/llama3.2/encoder.json" \
  --merges "$vocab/llama3.2/vocab.bpe" -o "$made" >/dev/null

# Special tokens are single ids at Llama 3's positions.
got=$("$VKLLM_BIN" tokenize --model "$made" --no-bos \
  '<|start_header_id|>user<|end_header_id|><|eot_id|><|reserved_special_token_247|>')
[ "$got" = '{"ids":[128006,882,128007,128009,128255]}' ] || fail "special tokens: $got"
got=$("$VKLLM_BIN" tokenize --model "$made" 'Hello')
[ "$got" = '{"ids":[128000,9906]}' ] || fail "BOS: $got"

# llama.cpp's llama-bpe vectors (single-line ones) through the made file.
count=$(expect_vocab_vectors "$vocab/ggml-vocab-llama-bpe.gguf" "$made")
echo "make-vocab: $count llama-bpe vectors match"

# --kind harmony: the same BPE, Harmony's special tokens at 128000+ (single ids), no BOS added.
"$VKLLM_BIN" dev make-vocab --kind harmony --encoder "$vocab/llama3.2/encoder.json" \
  --merges "$vocab/llama3.2/vocab.bpe" -o "$tmp/harmony.gguf" >/dev/null
got=$("$VKLLM_BIN" tokenize --model "$tmp/harmony.gguf" '<|start|>assistant<|channel|>final<|message|>Hello<|return|>')
[ "$got" = '{"ids":[128005,78191,128004,12085,128007,9906,128002]}' ] || fail "harmony specials: $got"
echo "make-vocab: harmony vocabulary"

# Bad inputs: exit 1 with a message naming the file, no crash.
echo '{"a": 0, "b": 200000}' >"$tmp/bad.json"
set +e
err=$("$VKLLM_BIN" dev make-vocab --encoder "$tmp/bad.json" --merges "$vocab/llama3.2/vocab.bpe" \
  -o "$tmp/x.gguf" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc -eq 1 ] || fail "out-of-range id: exit $rc ($err)"
[[ "$err" == vkllm:*bad.json*200000* ]] || fail "out-of-range id message: $err"
echo 'not json' >"$tmp/bad.json"
set +e
err=$("$VKLLM_BIN" dev make-vocab --encoder "$tmp/bad.json" --merges "$vocab/llama3.2/vocab.bpe" \
  -o "$tmp/x.gguf" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc -eq 1 ] || fail "bad JSON: exit $rc ($err)"
[[ "$err" == vkllm:*bad.json* ]] || fail "bad JSON message: $err"
[ ! -e "$tmp/x.gguf" ] || fail "a failed make-vocab left an output file"
echo "make-vocab: bad inputs rejected"

# The Gemma 4-style vocabulary: the committed fixture byte for byte, its chat markers single ids
# after the BOS llama.cpp forces, and make-model's default for gemma4.
: "${VKLLM_SOURCE_DIR:?}"
"$VKLLM_BIN" dev make-vocab --kind gemma4 -o "$tmp/gemma4-vocab.gguf" >/dev/null
cmp -s "$tmp/gemma4-vocab.gguf" "$VKLLM_SOURCE_DIR/tests/reference/gemma4tok/gemma4-vocab.gguf" ||
  fail "make-vocab --kind gemma4 differs from tests/reference/gemma4tok/gemma4-vocab.gguf"
got=$("$VKLLM_BIN" tokenize --model "$tmp/gemma4-vocab.gguf" $'<|turn>user\n<turn|>')
[ "$got" = '{"ids":[2,6,321,319,348,19,7]}' ] || fail "gemma4 markers: $got"
"$VKLLM_BIN" dev make-model --arch gemma4 --shape test-swa-narrow -o "$tmp/g4.gguf" >/dev/null
got=$("$VKLLM_BIN" tokenize --model "$tmp/g4.gguf" $'<|turn>user\n<turn|>')
[ "$got" = '{"ids":[2,6,321,319,348,19,7]}' ] || fail "make-model gemma4 default vocab: $got"
set +e
err=$("$VKLLM_BIN" dev make-vocab -o "$tmp/y.gguf" 2>&1 >/dev/null)
rc=$?
set -e
[ $rc -eq 1 ] && [[ "$err" == *"--encoder and --merges"* ]] || fail "llama3 without inputs: $rc $err"
echo "make-vocab: gemma4 vocabulary and make-model's default"
