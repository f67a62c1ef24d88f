#!/usr/bin/env bash
# `vkllm gguf-info` on real shared models (text and --json) and on corrupt files.
set -euo pipefail
: "${VKLLM_BIN:?}" "${VKLLM_SHARED_DIR:?}"
models="$VKLLM_SHARED_DIR/testdata/models"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# --json: the README's facts about ref-llama-f16.
"$VKLLM_BIN" gguf-info --json "$models/ref-llama-f16.gguf" >"$tmp/f16.json"
jq -e '.version == 3 and .alignment == 32' "$tmp/f16.json" >/dev/null || fail "header"
jq -e '.metadata["general.architecture"] == "llama"' "$tmp/f16.json" >/dev/null || fail "arch"
jq -e '.metadata["llama.block_count"] == 2 and .metadata["llama.embedding_length"] == 256
       and .metadata["llama.attention.head_count"] == 4
       and .metadata["llama.attention.head_count_kv"] == 2
       and .metadata["llama.feed_forward_length"] == 768' "$tmp/f16.json" >/dev/null ||
  fail "hyperparameters"
# Arrays come out in full in JSON, with their types.
jq -e '(.metadata["tokenizer.ggml.tokens"] | length) == 32000
       and .metadata["tokenizer.ggml.tokens"][1] == "<s>"
       and .metadata_types["tokenizer.ggml.tokens"] == "array[string]"
       and (.metadata["tokenizer.ggml.scores"] | length) == 32000' "$tmp/f16.json" >/dev/null ||
  fail "token arrays"
jq -e '(.tensors | length) == 21' "$tmp/f16.json" >/dev/null || fail "tensor count"
jq -e '.tensors[] | select(.name == "blk.0.attn_k.weight")
       | .type == "f16" and .shape == [256, 128] and .bytes == 65536' "$tmp/f16.json" >/dev/null ||
  fail "attn_k tensor"
# Every tensor lies inside the file, aligned, after the data section start.
size=$(stat -c %s "$models/ref-llama-f16.gguf")
jq -e --argjson size "$size" '.data_offset as $d | all(.tensors[]; .file_offset == .offset + $d
       and .file_offset % 32 == 0 and .file_offset + .bytes <= $size)' "$tmp/f16.json" \
  >/dev/null || fail "tensor spans"

# Text output: summarised arrays and the tensor table.
"$VKLLM_BIN" gguf-info "$models/ref-llama-q4_k_m.gguf" >"$tmp/q4.txt"
grep -q 'general.architecture (string) = "llama"' "$tmp/q4.txt" || fail "text metadata"
grep -q 'tokenizer.ggml.tokens (array\[string\]) = \["<unk>", "<s>", "</s>", .*\.\.\.\] (32000 items)' \
  "$tmp/q4.txt" || fail "text array summary"
grep -Eq '^  token_embd\.weight +q4_K +\[256, 32000\] +[0-9]+ +4608000$' "$tmp/q4.txt" ||
  fail "text tensor row"
[ "$(wc -l <"$tmp/q4.txt")" -lt 100 ] || fail "text output not summarised"

# Corrupt files: a clear error on stderr and exit code 1, never a crash.
check_corrupt() {  # file expected-message-fragment
  local rc=0
  "$VKLLM_BIN" gguf-info "$1" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "exit code $rc for $1: $(cat "$tmp/err")"
  grep -q "^vkllm: .*$2" "$tmp/err" || fail "message for $1: $(cat "$tmp/err")"
}
head -c 300000 "$models/llama-2-tiny-random.gguf" >"$tmp/truncated.gguf"
check_corrupt "$tmp/truncated.gguf" "tokenizer.ggml.tokens.*byte offset [0-9]*"
printf 'GGML\003\000\000\000' >"$tmp/magic.gguf"
check_corrupt "$tmp/magic.gguf" "magic at byte offset 0"
printf 'GGUF\001\000\000\000' >"$tmp/v1.gguf"
head -c 16 /dev/zero >>"$tmp/v1.gguf"
check_corrupt "$tmp/v1.gguf" "v1"
check_corrupt "$tmp/missing.gguf" "missing.gguf"
echo "gguf_info: ok"
