#!/usr/bin/env bash
# Records llama.cpp's outputs into decoder cases of tests/reference/families (README.md there):
# for each CASE.json, makes its fixture with `vkllm dev make-model` from the case's "model"
# parameters, stores the file's sha256 in the case, and runs record_decoder.cpp (built here
# against libllama) on it.
#
#   tests/reference/tools/record_families.sh VKLLM LLAMA_LIB_DIR CASE.json...
#
# VKLLM: build/server/vkllm. LLAMA_LIB_DIR: a directory holding libllama.so, libggml.so and
# libggml-base.so (and ggml's loadable CPU backends, if the build has them) of llama.cpp commit
# de3ff815 (node-llama-cpp 3.22.1's: /work/llamacpp's CPU build, or the prebuilt binaries of
# the npm package @node-llama-cpp/linux-x64@3.22.1, bins/linux-x64, whose versioned names need
# the links libllama.so -> libllama.v0.5.0.so and libggml.so -> libggml.v0.5.0.so). Headers:
# LLAMA_SRC (default /work/llamacpp/src). Vocabularies: VKLLM_SHARED_DIR (default ../shared).
set -euo pipefail
vkllm=$(realpath "$1")
lib=$(realpath "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
src=${LLAMA_SRC:-/work/llamacpp/src}
shared=${VKLLM_SHARED_DIR:-$repo/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O1 -std=c++20 -I"$src/include" -I"$src/ggml/include" "$here/record_decoder.cpp" \
  -o "$work/record_decoder" -L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib"
for case in "$@"; do
  read -r arch shape type seed vocab < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["model"]
print(m["arch"], m["shape"], m["type"], m["seed"], m["vocab"])' "$case")
  case $vocab in tests/*) vocab_path=$repo/$vocab ;; *) vocab_path=$shared/testdata/$vocab ;; esac
  "$vkllm" dev make-model --arch "$arch" --shape "$shape" --type "$type" --seed "$seed" \
    --vocab "$vocab_path" -o "$work/model.gguf" > /dev/null
  sha=$(sha256sum "$work/model.gguf" | cut -d' ' -f1)
  python3 -c '
import json, sys
c = json.load(open(sys.argv[1]), object_pairs_hook=dict)
c["model"]["sha256"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"))' "$case" "$sha"
  "$work/record_decoder" "$work/model.gguf" "$case" "$lib"
  echo "recorded $case"
done
