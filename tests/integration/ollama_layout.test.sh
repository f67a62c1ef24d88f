#!/usr/bin/env bash
# Models in Ollama's converter layout (`vkllm dev make-model --layout ollama`: gemma3 with its
# vision tower embedded, EmbeddingGemma, Llama 3, mistral3, qwen3moe, gpt-oss, Qwen2.5-VL, Qwen3-VL,
# Gemma 4 with its tower, snowflake-arctic-embed2) reach vkllm the
# ways Ollama's library models do: pushed to a real docker-registry under an Ollama-style manifest
# and pulled through /api/pull, and copied from an Ollama store by `vkllm import-ollama`. Both keep
# the file byte for byte, and each chats (or embeds) exactly like the llama.cpp-layout twin made
# from the same weights (the translation happens at load).
source "$(dirname "$0")/lib.sh"

vocab=$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf
for layout in llama.cpp ollama; do
  "$VKLLM_BIN" dev make-model --arch gemma3 --shape 64x2x2x1 --vocab "$vocab" --seed 47 \
    --layout "$layout" -o "$TEST_TMP/$layout.gguf" >/dev/null || fail "make-model --layout $layout"
done
gguf=$TEST_TMP/ollama.gguf
"$VKLLM_BIN" gguf-info --json "$gguf" >"$TEST_TMP/info.json"
jq -e '.translation.name == "ollama-gemma3" and all(.tensors[]; (.name | startswith("v.")) | not)
       and (.translation.changes | any(startswith("gemma3.rope.freq_base = 1000000")))' \
  "$TEST_TMP/info.json" >/dev/null || fail "gguf-info translation: $(jq -c .translation "$TEST_TMP/info.json")"
"$VKLLM_BIN" gguf-info --json --raw "$gguf" >"$TEST_TMP/raw.json"
jq -e '.translation == null and any(.tensors[]; .name == "v.patch_embedding.weight")
       and (.metadata | has("gemma3.rope.freq_base") | not)' "$TEST_TMP/raw.json" >/dev/null \
  || fail "gguf-info --raw"
"$VKLLM_BIN" gguf-info "$TEST_TMP/llama.cpp.gguf" | grep -q '^layout: *as stored (no translation)$' \
  || fail "a llama.cpp-layout file is translated"
# A file with an Ollama marker but not what the translation needs (fuzz seed: a Llama 3 chat
# template and no pre-tokenizer over a 3-token vocabulary): refused naming it; --raw reads it.
half=$VKLLM_SOURCE_DIR/tests/fuzz/corpus/gguf/ollama-llama3.gguf
if "$VKLLM_BIN" gguf-info "$half" >/dev/null 2>"$TEST_TMP/half.err"; then fail "half match accepted"; fi
grep -q "looks like Ollama's llama3 layout .*no <|eot_id|> at 128009.*(--raw shows the file as stored)" \
  "$TEST_TMP/half.err" || fail "half-match message: $(cat "$TEST_TMP/half.err")"
"$VKLLM_BIN" gguf-info --raw "$half" >/dev/null || fail "gguf-info --raw of the half match"
pass "gguf-info names the translation; --raw shows the file as stored; a half match is refused"

# The blobs and the manifest as Ollama's library serves them.
hex=$(sha256sum "$gguf" | cut -d' ' -f1)
printf '{{ range .Messages }}<start_of_turn>{{ .Role }}\n{{ .Content }}<end_of_turn>\n{{ end }}<start_of_turn>model\n' \
  >"$TEST_TMP/template"
printf '{"stop":["<end_of_turn>"]}' >"$TEST_TMP/params"
# ollama_manifest DIR GGUF FAMILY [TEMPLATE PARAMS]: DIR/config and DIR/manifest as Ollama's
# library serves a model, with links to the layer files in DIR.
ollama_manifest() {
  local dir=$1 gguf=$2 family=$3 template=${4:-} params=${5:-}
  mkdir -p "$dir"
  jq -nc --arg d "sha256:$(sha256sum "$gguf" | cut -d' ' -f1)" --arg f "$family" \
    '{model_format:"gguf", model_family:$f, model_families:[$f], model_type:"tiny",
      file_type:"F16", architecture:"amd64", os:"linux", rootfs:{type:"layers", diff_ids:[$d]}}' \
    >"$dir/config"
  local layers=("$(layer "$gguf" application/vnd.ollama.image.model)")
  ln -sf "$gguf" "$dir/$(basename "$gguf")"
  if [ -n "$template" ]; then
    layers+=("$(layer "$template" application/vnd.ollama.image.template)"
             "$(layer "$params" application/vnd.ollama.image.params)")
    ln -sf "$template" "$dir/template"
    ln -sf "$params" "$dir/params"
  fi
  jq -nc --argjson c "$(layer "$dir/config" application/vnd.docker.container.image.v1+json)" \
    --argjson l "$(printf '%s\n' "${layers[@]}" | jq -sc .)" \
    '{schemaVersion:2, mediaType:"application/vnd.docker.distribution.manifest.v2+json",
      config:$c, layers:$l}' >"$dir/manifest"
}
layer() {  # FILE MEDIA-TYPE
  jq -nc --arg t "$2" --arg d "sha256:$(sha256sum "$1" | cut -d' ' -f1)" --argjson s "$(stat -L -c %s "$1")" \
    '{mediaType:$t, digest:$d, size:$s}'
}
ollama_manifest "$TEST_TMP/published" "$gguf" gemma3 "$TEST_TMP/template" "$TEST_TMP/params"
cp "$TEST_TMP/published/config" "$TEST_TMP/config"
cp "$TEST_TMP/published/manifest" "$TEST_TMP/manifest"

# An Ollama store holding it, imported before the server starts.
store=$TEST_TMP/ollama-store
mkdir -p "$store/manifests/registry.ollama.ai/library/gemma3-olayout" "$store/blobs"
cp "$TEST_TMP/manifest" "$store/manifests/registry.ollama.ai/library/gemma3-olayout/latest"
for f in config "$(basename "$gguf")" template params; do
  cp "$TEST_TMP/$f" "$store/blobs/sha256-$(sha256sum "$TEST_TMP/$f" | cut -d' ' -f1)"
done
mkdir -p "$TEST_TMP/server/models"
OLLAMA_MODELS=$TEST_TMP/server/models HOME=$TEST_TMP/server "$VKLLM_BIN" import-ollama "$store" \
  >"$TEST_TMP/import.out" 2>&1 || fail "import-ollama: $(cat "$TEST_TMP/import.out")"
grep -q '^1 models imported' "$TEST_TMP/import.out" || fail "import-ollama: $(cat "$TEST_TMP/import.out")"

# Push the same to a docker-registry.
command -v docker-registry >/dev/null || fail "docker-registry missing (scripts/setup installs it)"
read -r reg_port _ < <(bash "$VKLLM_SOURCE_DIR/tests/support/start-registry.sh" "$TEST_TMP/registry" $$)
[ -n "$reg_port" ] || fail "docker-registry did not start"
trap 'bash "$VKLLM_SOURCE_DIR/tests/support/stop-registry.sh" "$TEST_TMP/registry" >/dev/null 2>&1 || true; _vkllm_cleanup' EXIT
REG=127.0.0.1:$reg_port
# push DIR REPO TAG: every layer file in DIR, then DIR/manifest as REPO:TAG.
push() {
  local dir=$1 repo=$2 tag=$3 f loc sep
  for f in "$dir"/*; do
    [ "$(basename "$f")" = manifest ] && continue
    loc=$(curl -s -D - -o /dev/null -X POST "http://$REG/v2/$repo/blobs/uploads/" \
      | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
    [[ $loc == http* ]] || loc=http://$REG$loc
    [[ $loc == *\?* ]] && sep='&' || sep='?'
    curl -sf -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$f" \
      "$loc${sep}digest=sha256:$(sha256sum "$f" | cut -d' ' -f1)" >/dev/null || fail "upload $f"
  done
  curl -sf -X PUT -H 'Content-Type: application/vnd.docker.distribution.manifest.v2+json' \
    --data-binary "@$dir/manifest" "http://$REG/v2/$repo/manifests/$tag" >/dev/null \
    || fail "manifest upload $repo:$tag"
}
push "$TEST_TMP/published" test/gemma3-olayout v1

vkllm_start
curl -s "$VKLLM_URL/api/pull" -d "{\"model\":\"$REG/test/gemma3-olayout:v1\",\"stream\":false}" \
  | jq -e '.status == "success"' >/dev/null || fail "pull from docker-registry"
for name in "test/gemma3-olayout" "library/gemma3-olayout"; do
  curl -s "$VKLLM_URL/v2/$name/blobs/sha256:$hex" | cmp -s - "$gguf" \
    || fail "$name: the stored model blob is not the file as published"
done
pass "pulled and imported Ollama-layout blobs are kept byte for byte"

twin=$TEST_TMP/llama.cpp.gguf
digest=$(upload_blob "$twin")
req=$(jq -nc --arg d "$digest" --rawfile t "$TEST_TMP/template" --slurpfile p "$TEST_TMP/params" \
  '{model:"twin", files:{"twin.gguf":$d}, template:$t, parameters:$p[0], stream:false}')
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create twin: $(body)"
node_client "$(dirname "$0")/ollama_layout.mjs" "$VKLLM_URL" twin "$REG/test/gemma3-olayout:v1" \
  gemma3-olayout || fail "npm client chats"
grep -q "loaded $REG/test/gemma3-olayout:v1 in .*; ollama-gemma3 layout read as llama.cpp's$" \
  "$VKLLM_LOG" || fail "the load log does not name the translation"
grep -q "loaded twin:latest in .*)$" "$VKLLM_LOG" || fail "the twin's load log names a translation"
pass "Ollama-layout gemma3 chats like its llama.cpp-layout twin"

# EmbeddingGemma as Ollama published it (architecture gemma3, dense.0 / dense.1) is created from
# the file as it is and embeds exactly like its llama.cpp-layout twin (gemma-embedding).
for layout in llama.cpp ollama; do
  f=$TEST_TMP/eg-$layout.gguf
  "$VKLLM_BIN" dev make-model --arch gemma-embedding --shape 64x6x2x1 --vocab "$vocab" --seed 48 \
    --layout "$layout" -o "$f" >/dev/null || fail "make-model gemma-embedding --layout $layout"
  d=$(upload_blob "$f")
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" \
    -d "{\"model\":\"eg-$layout\",\"files\":{\"m.gguf\":\"$d\"},\"stream\":false}")" 200 \
    "create eg-$layout: $(body)"
  curl -sf "$VKLLM_URL/api/embed" -d "{\"model\":\"eg-$layout\",\"input\":\"The quick brown fox\"}" \
    | jq -c .embeddings >"$TEST_TMP/eg-$layout.json" || fail "embed with eg-$layout"
done
curl -sf "$VKLLM_URL/api/show" -d '{"model":"eg-ollama"}' \
  | jq -e '.capabilities == ["embedding"] and .model_info["general.architecture"] == "gemma-embedding"' \
    >/dev/null || fail "show eg-ollama: $(curl -s "$VKLLM_URL/api/show" -d '{"model":"eg-ollama"}' | jq -c '{capabilities, a: .model_info["general.architecture"]}')"
jq -e 'length == 1 and (.[0] | length) == 64' "$TEST_TMP/eg-ollama.json" >/dev/null \
  || fail "eg-ollama embedding: $(head -c 200 "$TEST_TMP/eg-ollama.json")"
cmp -s "$TEST_TMP/eg-llama.cpp.json" "$TEST_TMP/eg-ollama.json" \
  || fail "the Ollama-layout EmbeddingGemma embeds differently from its twin"
pass "Ollama-layout EmbeddingGemma embeds like its llama.cpp-layout twin"

# The other architectures with an Ollama layout, as Ollama's library publishes them, pulled from
# the registry: the same capabilities and the same greedy chat replies as the llama.cpp-layout
# twin. Llama 3 comes with its template layer (the twin is created with the same template);
# gpt-oss with MXFP4 experts and none: its architecture chooses Harmony for both.
spm=$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf
"$VKLLM_BIN" dev make-vocab --encoder "$VKLLM_SHARED_DIR/testdata/vocab/llama3.2/encoder.json" \
  --merges "$VKLLM_SHARED_DIR/testdata/vocab/llama3.2/vocab.bpe" -o "$TEST_TMP/llama3-vocab.gguf" \
  >/dev/null || fail "make-vocab"
printf '%s' '{{ range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>

{{ .Content }}<|eot_id|>{{ end }}<|start_header_id|>assistant<|end_header_id|>

' >"$TEST_TMP/llama3-template"
printf '{"stop":["<|eot_id|>"]}' >"$TEST_TMP/llama3-params"
for spec in "llama 64x2x2x1 F16 ollama-llama3 llama3" "mistral3 64x2x2x1 F16 ollama-mistral3 -" \
            "qwen3moe test Q8_0 ollama-qwen3moe -" "gpt-oss test MXFP4_MOE ollama-gptoss -" \
            "qwen2vl 64x2x2x1 F16 ollama-qwen25vl -" "qwen3vl 64x2x2x1 F16 ollama-qwen3vl -" \
            "gemma4 64x2x2x1 F16 ollama-gemma4 -"; do
  read -r arch shape type translation tmpl <<<"$spec"
  vocab_file=$spm template=() create_template='{}'
  if [ "$tmpl" != - ]; then
    vocab_file=$TEST_TMP/$tmpl-vocab.gguf
    template=("$TEST_TMP/$tmpl-template" "$TEST_TMP/$tmpl-params")
    create_template=$(jq -nc --rawfile t "${template[0]}" --slurpfile p "${template[1]}" \
      '{template:$t, parameters:$p[0]}')
  fi
  for layout in llama.cpp ollama; do
    "$VKLLM_BIN" dev make-model --arch "$arch" --shape "$shape" --type "$type" --vocab "$vocab_file" \
      --seed 49 --layout "$layout" -o "$TEST_TMP/$arch-$layout.gguf" >/dev/null \
      || fail "make-model $arch --layout $layout"
  done
  ollama_manifest "$TEST_TMP/pub-$arch" "$TEST_TMP/$arch-ollama.gguf" "$arch" "${template[@]}"
  push "$TEST_TMP/pub-$arch" "test/$arch-olayout" v1
  curl -s "$VKLLM_URL/api/pull" -d "{\"model\":\"$REG/test/$arch-olayout:v1\",\"stream\":false}" \
    | jq -e '.status == "success"' >/dev/null || fail "pull $arch from docker-registry"
  d=$(upload_blob "$TEST_TMP/$arch-llama.cpp.gguf")
  req=$(jq -nc --arg m "$arch-twin" --arg d "$d" --argjson t "$create_template" \
    '{model:$m, files:{"m.gguf":$d}, stream:false} + $t')
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create $arch-twin: $(body)"
  for m in "$arch-twin" "$REG/test/$arch-olayout:v1"; do
    # Ollama's mistral3 carries its Pixtral tower (vision; vision.test.sh runs it): the rest alike.
    curl -sf "$VKLLM_URL/api/show" -d "{\"model\":\"$m\"}" >"$TEST_TMP/show.json" || fail "show $m"
    jq -c '[.capabilities - ["vision"], .model_info["general.architecture"]]' "$TEST_TMP/show.json" \
      >"$TEST_TMP/show-$arch-${m##*:}"
    if [ "$arch" = mistral3 ] && [ "$m" != "$arch-twin" ]; then
      jq -e '.capabilities | index("vision")' "$TEST_TMP/show.json" >/dev/null ||
        fail "Ollama's mistral3 lists no vision: $(jq -c .capabilities "$TEST_TMP/show.json")"
    fi
    curl -sf "$VKLLM_URL/api/chat" -d "{\"model\":\"$m\",\"stream\":false,
        \"messages\":[{\"role\":\"user\",\"content\":\"Where do foxes live?\"}],
        \"options\":{\"temperature\":0,\"num_predict\":8}}" \
      | jq -c '[.message.content, .message.thinking, .eval_count, .prompt_eval_count]' \
      >"$TEST_TMP/chat-$arch-${m##*:}" || fail "chat $m"
  done
  cmp -s "$TEST_TMP/show-$arch-$arch-twin" "$TEST_TMP/show-$arch-v1" \
    || fail "$arch: show differs: $(cat "$TEST_TMP/show-$arch-$arch-twin") vs $(cat "$TEST_TMP/show-$arch-v1")"
  jq -e '.[2] == 8' "$TEST_TMP/chat-$arch-v1" >/dev/null || fail "$arch chat: $(cat "$TEST_TMP/chat-$arch-v1")"
  cmp -s "$TEST_TMP/chat-$arch-$arch-twin" "$TEST_TMP/chat-$arch-v1" \
    || fail "$arch replies differ: $(cat "$TEST_TMP/chat-$arch-$arch-twin") vs $(cat "$TEST_TMP/chat-$arch-v1")"
  if [ "$arch" = qwen2vl ] || [ "$arch" = qwen3vl ] || [ "$arch" = gemma4 ]; then  # the tower runs
    img=$(base64 -w0 "$VKLLM_SOURCE_DIR/tests/reference/vision/tall-90x130.png")
    jq -nc --arg m "$REG/test/$arch-olayout:v1" --arg img "$img" \
      '{model:$m, stream:false, options:{num_predict:4}, messages:[{role:"user", content:"hi", images:[$img]}]}' \
      >"$TEST_TMP/req.json"
    expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary @"$TEST_TMP/req.json")" 200 \
      "$arch image chat: $(body)"
    jq -e '.eval_count == 4' "$TEST_TMP/body" >/dev/null || fail "$arch image chat: $(body)"
  fi
  grep -q "loaded $REG/test/$arch-olayout:v1 in .*; $translation layout read as llama.cpp's$" \
    "$VKLLM_LOG" || fail "the $arch load log does not name $translation"
done
pass "Ollama-layout Llama 3, mistral3, qwen3moe, gpt-oss, Qwen2.5-VL, Qwen3-VL and Gemma 4 pulled from a registry chat like their twins (the ones with a tower about an image too)"

# snowflake-arctic-embed2 as Ollama's library publishes it (bert, its XLM-R tokenizer's charsmap
# as base64 text in one-character strings), pulled from the registry, embeds NFKC-folded,
# Cyrillic and unknown (CJK) text exactly like its llama.cpp-layout twin.
xlmr=$VKLLM_SOURCE_DIR/tests/reference/unigram/xlmr-unigram-vocab.gguf
for layout in llama.cpp ollama; do
  "$VKLLM_BIN" dev make-model --arch bert --shape 64x2x2x2 --vocab "$xlmr" --seed 51 \
    --layout "$layout" -o "$TEST_TMP/sf-$layout.gguf" >/dev/null || fail "make-model bert --layout $layout"
done
ollama_manifest "$TEST_TMP/pub-sf" "$TEST_TMP/sf-ollama.gguf" bert
push "$TEST_TMP/pub-sf" test/snowflake-olayout v1
curl -s "$VKLLM_URL/api/pull" -d "{\"model\":\"$REG/test/snowflake-olayout:v1\",\"stream\":false}" \
  | jq -e '.status == "success"' >/dev/null || fail "pull snowflake-arctic-embed2 from docker-registry"
d=$(upload_blob "$TEST_TMP/sf-llama.cpp.gguf")
expect_eq "$(http_status POST "$VKLLM_URL/api/create" \
  -d "{\"model\":\"sf-twin\",\"files\":{\"m.gguf\":\"$d\"},\"stream\":false}")" 200 "create sf-twin: $(body)"
for m in sf-twin "$REG/test/snowflake-olayout:v1"; do
  curl -sf "$VKLLM_URL/api/show" -d "{\"model\":\"$m\"}" \
    | jq -e '.capabilities == ["embedding"] and .model_info["general.architecture"] == "bert"' \
    >/dev/null || fail "show $m"
  curl -sf "$VKLLM_URL/api/embed" -d "$(jq -nc --arg m "$m" \
      '{model:$m, input:"Ｐｉｅｒｒｅ met Наташа   again: 战争与和平"}')" \
    | jq -c .embeddings >"$TEST_TMP/sf-${m##*:}.json" || fail "embed with $m"
done
jq -e 'length == 1 and (.[0] | length) == 64' "$TEST_TMP/sf-v1.json" >/dev/null \
  || fail "snowflake-arctic-embed2 embedding: $(head -c 200 "$TEST_TMP/sf-v1.json")"
cmp -s "$TEST_TMP/sf-sf-twin.json" "$TEST_TMP/sf-v1.json" \
  || fail "the Ollama-layout snowflake-arctic-embed2 embeds differently from its twin"
grep -q "loaded $REG/test/snowflake-olayout:v1 in .*; ollama-snowflake-arctic-embed2 layout read as llama.cpp's$" \
  "$VKLLM_LOG" || fail "the load log does not name the snowflake-arctic-embed2 translation"
pass "Ollama-layout snowflake-arctic-embed2 pulled from a registry embeds like its twin"
