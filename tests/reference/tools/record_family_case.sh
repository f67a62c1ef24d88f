#!/usr/bin/env bash
# Re-records one tests/reference/families (or tests/reference/mtp) case with llama.cpp's CPU
# backend: makes the case's fixture with `vkllm dev make-model` (its "model" block: arch, shape,
# type, seed, vocab, and where true stacked_experts: --stacked-experts, mtp: --mtp), builds
# family_logits_ref.cpp (a case of kind "mtp": mtp_draft_ref.cpp) against libllama, and writes
# prompt_tokens, last_logits, greedy_tokens, greedy_margins (and an mtp case's draft steps) and the
# fixture's sha256 into the case file.
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

read -r arch shape type seed vocab tool flags < <(python3 - "$case_file" "$repo" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["model"]
v = m["vocab"]
v = f"{sys.argv[2]}/{v}" if v.startswith("tests/") else f"{sys.argv[2]}/../shared/testdata/{v}"
mtp = d.get("kind") == "mtp"
flags = " ".join(f for f, on in (("--stacked-experts", m.get("stacked_experts")),
                                  ("--mtp", m.get("mtp"))) if on)
print(m["arch"], m["shape"], m["type"], m["seed"], v,
      "mtp_draft_ref.cpp" if mtp else "family_logits_ref.cpp", flags)
PY
)
# shellcheck disable=SC2086  # the flags are words
"$vkllm" dev make-model --arch "$arch" --shape "$shape" --type "$type" --seed "$seed" \
  --vocab "$vocab" $flags -o "$tmp/model.gguf" >/dev/null
# (mtp_draft_ref.cpp reads llama.cpp's internal llama-ext.h for the NextN hooks.)
g++ -O2 -std=c++17 "$here/$tool" -o "$tmp/ref" -I "$llama/src/include" -I "$llama/src/src" \
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
