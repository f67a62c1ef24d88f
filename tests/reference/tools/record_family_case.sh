#!/usr/bin/env bash
# Re-records one tests/reference/families case with llama.cpp's CPU backend: makes the case's
# fixture with `vkllm dev make-model` (its "model" block: arch, shape, type, seed, vocab and
# stacked_experts where true: --stacked-experts), builds
# family_logits_ref.cpp against libllama, and writes prompt_tokens, last_logits, greedy_tokens,
# greedy_margins and the fixture's sha256 into the case file.
#
# Usage: tests/reference/tools/record_family_case.sh CASE.json [VKLLM_BIN] [LLAMA_CPP_DIR]
# (defaults: build/server/vkllm, /work/llamacpp with src/ and build/bin/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
case_file=$1
vkllm=${2:-$repo/build/server/vkllm}
llama=${3:-/work/llamacpp}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r arch shape type seed vocab stacked < <(python3 - "$case_file" "$repo" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["model"]
v = m["vocab"]
v = f"{sys.argv[2]}/{v}" if v.startswith("tests/") else f"{sys.argv[2]}/../shared/testdata/{v}"
print(m["arch"], m["shape"], m["type"], m["seed"], v,
      "--stacked-experts" if m.get("stacked_experts") else "")
PY
)
"$vkllm" dev make-model --arch "$arch" --shape "$shape" --type "$type" --seed "$seed" \
  --vocab "$vocab" ${stacked:+"$stacked"} -o "$tmp/model.gguf" >/dev/null
g++ -O2 -std=c++17 "$here/family_logits_ref.cpp" -o "$tmp/ref" -I "$llama/src/include" \
  -I "$llama/src/ggml/include" -I "$llama/src/vendor" -L "$llama/build/bin" -lllama -lggml \
  -lggml-base -Wl,-rpath,"$llama/build/bin"
"$tmp/ref" "$tmp/model.gguf" "$case_file" 2>"$tmp/log" || { cat "$tmp/log"; exit 1; }
python3 - "$case_file" "$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["model"]["sha256"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
print(f"{sys.argv[1]}: {len(d['prompt_tokens'])} prompt tokens, greedy {d['greedy_tokens']}")
PY
