#!/usr/bin/env bash
# `vkllm tokenize` / `vkllm detokenize` on the shared llama-spm vocabulary: ids match llama.cpp's
# test vectors, detokenize inverts tokenize, and a bad model path fails with a clear message.
set -euo pipefail
: "${VKLLM_BIN:?}" "${VKLLM_SHARED_DIR:?}"
vocab="$VKLLM_SHARED_DIR/testdata/vocab"
model="$vocab/ggml-vocab-llama-spm.gguf"
source "$(dirname "$0")/lib.sh"
tmp=$TEST_TMP

# Every llama.cpp vector that is a single line: tokenize --no-bos must print exactly its ids.
count=$(expect_vocab_vectors "$model" "$model")
echo "tokenize: $count vectors match"

# BOS is added by default (the vocabulary asks for it), and stdin works with '-'.
got=$(printf 'Hello world' | "$VKLLM_BIN" tokenize --model "$model" -)
[ "$got" = '{"ids":[1,15043,3186]}' ] || fail "tokenize from stdin with BOS: $got"

# detokenize inverts tokenize (BOS renders as nothing), including multi-line UTF-8 text.
text=$'Hello, y\'all! How are you 😁 ?我想在apple工作1314151天～\n  second line'
ids=$(printf '%s' "$text" | "$VKLLM_BIN" tokenize --model "$model" - | jq -r '.ids | map(tostring) | join(" ")')
# shellcheck disable=SC2086  # one argument per id
"$VKLLM_BIN" detokenize --model "$model" $ids >"$tmp/back.txt"
printf '%s' "$text" >"$tmp/orig.txt"
cmp -s "$tmp/orig.txt" "$tmp/back.txt" || fail "detokenize round trip: got '$(cat "$tmp/back.txt")'"
echo "detokenize: round trip ok"

# A bad model path: exit status 1 and a message naming the path.
set +e
err=$("$VKLLM_BIN" tokenize --model "$tmp/missing.gguf" hello 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "missing model: exit $rc, want 1"
grep -q "missing.gguf" <<<"$err" || fail "missing model: message does not name the file: $err"
# Not a GGUF file at all.
set +e
err=$("$VKLLM_BIN" detokenize --model "$vocab/ggml-vocab-llama-spm.gguf.inp" 1 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "non-GGUF model: exit $rc, want 1"
grep -qi "gguf" <<<"$err" || fail "non-GGUF model: unclear message: $err"
echo "errors: ok"
