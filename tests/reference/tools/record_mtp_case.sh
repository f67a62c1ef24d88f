#!/usr/bin/env bash
# Records a tests/reference/mtp case with llama.cpp's CPU backend: makes the case's fixture with
# `vkllm dev make-model --mtp` (its "model" block: arch, shape, type, seed, vocab), builds
# mtp_draft_ref.cpp against libllama (it reads llama.cpp's internal llama-ext.h for the NextN
# hooks), and writes the model's prompt tokens, last logits and greedy tokens, the NextN block's
# first draft logits, draft tokens and margins, and the fixture's sha256 into the case file.
#
# Usage: tests/reference/tools/record_mtp_case.sh CASE.json [VKLLM_BIN] [LLAMA_CPP_DIR]
# (defaults: build/server/vkllm, /work/llamacpp with src/ and build/bin/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
case_file=$1
vkllm=${2:-$repo/build/server/vkllm}
llama=${3:-/work/llamacpp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r arch shape type seed vocab < <(python3 - "$case_file" "$repo" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["model"]
v = m["vocab"]
v = f"{sys.argv[2]}/{v}" if v.startswith("tests/") else f"{sys.argv[2]}/../shared/testdata/{v}"
print(m["arch"], m["shape"], m["type"], m["seed"], v)
PY
)
"$vkllm" dev make-model --arch "$arch" --shape "$shape" --type "$type" --seed "$seed" \
  --vocab "$vocab" --mtp -o "$tmp/model.gguf" >/dev/null
g++ -O2 -std=c++17 "$here/mtp_draft_ref.cpp" -o "$tmp/ref" -I "$llama/src/include" \
  -I "$llama/src/src" -I "$llama/src/ggml/include" -I "$llama/src/vendor" -L "$llama/build/bin" \
  -lllama -lggml -lggml-base -Wl,-rpath,"$llama/build/bin"
"$tmp/ref" "$tmp/model.gguf" "$case_file" 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
python3 - "$case_file" "$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"]["sha256"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
print(f"{sys.argv[1]}: {len(d['prompt_tokens'])} prompt tokens, drafts {d['mtp']['draft_tokens']}")
PY
