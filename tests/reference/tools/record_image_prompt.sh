#!/bin/sh
# Builds record_image_prompt.cpp against a llama.cpp source tree ($1) and its CPU build with
# shared libraries ($2: libllama, libmtmd, libggml in $2/bin), then records one image prompt:
#   record_image_prompt.sh LLAMA_SRC LLAMA_BUILD MODEL.gguf MMPROJ.gguf IMAGE PROMPT N_GREEDY > out
# (tests/reference/vision/README.md says which files and prompt each case uses).
set -eu
src=$1 build=$2
shift 2
tool=$(mktemp -d)/record_image_prompt
g++ -std=c++17 -O2 "$(dirname "$0")/record_image_prompt.cpp" -I"$src/include" \
  -I"$src/ggml/include" -I"$src/tools/mtmd" -L"$build/bin" -lmtmd -lllama -lggml -lggml-base \
  -Wl,-rpath,"$build/bin" -o "$tool"
"$tool" "$@"
