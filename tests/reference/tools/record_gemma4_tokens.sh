#!/usr/bin/env bash
# Re-records tests/reference/gemma4tok: writes the Gemma 4-style test vocabulary with
# `vkllm dev make-vocab --kind gemma4`, builds gemma4_tokens_ref.cpp against llama.cpp's libllama,
# records llama.cpp's tokens for the cases in tokens.json, and checks that a make-model gemma4
# fixture on that vocabulary tokenizes identically in llama.cpp.
#
# Usage: tests/reference/tools/record_gemma4_tokens.sh [VKLLM_BIN] [LLAMA_CPP_DIR]
# (defaults: build/server/vkllm, /work/llamacpp with src/ and build/bin/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
vkllm=${1:-$repo/build/server/vkllm}
llama=${2:-/work/llamacpp}
out=$repo/tests/reference/gemma4tok
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$vkllm" dev make-vocab --kind gemma4 -o "$out/gemma4-vocab.gguf"
g++ -O1 -std=c++17 "$here/gemma4_tokens_ref.cpp" -o "$tmp/ref" -I "$llama/src/include" \
  -I "$llama/src/ggml/include" -I "$llama/src/vendor" -L "$llama/build/bin" -lllama -lggml \
  -lggml-base -Wl,-rpath,"$llama/build/bin"
"$tmp/ref" "$out/tokens.json" "$out/gemma4-vocab.gguf" "$tmp/tokens.json" 2>"$tmp/log" ||
  { cat "$tmp/log"; exit 1; }
mv "$tmp/tokens.json" "$out/tokens.json"

# The same ids from a whole model on the vocabulary (llama.cpp loads the fixture unchanged).
"$vkllm" dev make-model --arch gemma4 --shape test-swa --vocab "$out/gemma4-vocab.gguf" \
  -o "$tmp/model.gguf" >/dev/null
"$tmp/ref" "$out/tokens.json" "$tmp/model.gguf" "$tmp/model.json" 2>"$tmp/log" ||
  { cat "$tmp/log"; exit 1; }
python3 - "$out/tokens.json" "$tmp/model.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["cases"] == b["cases"] and a["eog"] == b["eog"], "model and vocab tokenize differently"
print(f"recorded {len(a['cases'])} cases; the gemma4 model fixture tokenizes identically")
PY
