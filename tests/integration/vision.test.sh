#!/usr/bin/env bash
# Gemma 3 with a vision projector end to end (issue 38): a random-weight gemma3 model and its
# projector from `vkllm dev make-model`, created from a Modelfile with two FROM lines; /api/show
# lists the vision capability; a chat turn with an image answers, and the next turn about the
# same image evaluates only the new tokens (the image's blocks come from the prefix cache); a
# different picture is a different prompt (its first token's logprob differs); /api/generate and
# Anthropic's /v1/messages take images; `vkllm run` reads an image path in the prompt; bad base64,
# a file that is not a picture and a remote URL are 400s in each route's error shape; the npm
# ollama and openai clients stream answers (vision.mjs); a mistral3 model with a Pixtral projector
# answers about images of two sizes (their row counts differ); Ollama's single-file Gemma 3 and
# Mistral 3 (the tower inside the GGUF) answer as their two-file twins; a qwen2vl model with a
# Qwen2.5-VL projector continues mtmd's recorded prompt as llama.cpp does (M-RoPE positions), and
# so does Ollama's single-file qwen25vl as its twin; a qwen3vl model with its Qwen3-VL projector
# (interleaved M-RoPE, deepstack), and Ollama's single-file qwen3vl as its twin; a gemma4 model
# with its gemma4v projector continues mtmd's recorded prompt as llama.cpp does (two-way
# attention in its local layers), and so does Ollama's single-file gemma4 as its twin.
# About 3 s on the CPU backend.
source "$(dirname "$0")/lib.sh"

vision=$VKLLM_SOURCE_DIR/tests/reference/vision
"$VKLLM_BIN" dev make-model --arch gemma3 --shape test --type F16 --seed 40 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/gemma3.gguf" --projector "$TEST_TMP/mmproj.gguf" --projector-shape test:1 \
  >/dev/null || fail "make-model"
# The same weights as Ollama publishes Gemma 3: one file, the tower and projector inside.
"$VKLLM_BIN" dev make-model --arch gemma3 --shape test --type F16 --seed 40 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/gemma3-ollama.gguf" --layout ollama --projector-shape test:1 \
  >/dev/null || fail "make-model --layout ollama"
cp "$vision/wide-300x200.png" "$TEST_TMP/wide.png"
printf 'FROM %s\nFROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/gemma3.gguf" "$TEST_TMP/mmproj.gguf" >"$TEST_TMP/Modelfile"

vkllm_start
"$VKLLM_BIN" create g3v -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create g3v"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"g3v"}')" 200 "show"
jq -e '.capabilities | index("vision")' "$TEST_TMP/body" >/dev/null ||
  fail "no vision capability: $(jq -c .capabilities "$TEST_TMP/body")"
pass "a gemma3 model with a projector lists vision"

wide=$(base64 -w0 "$TEST_TMP/wide.png")
tall=$(base64 -w0 "$vision/tall-90x130.png")
opts='{"temperature":0,"num_predict":4}'
# chat IMAGE: one turn about IMAGE (base64); the answer in $TEST_TMP/body.
chat() {
  jq -nc --arg img "$1" --argjson o "$opts" \
    '{model:"g3v", stream:false, logprobs:true, options:$o,
      messages:[{role:"user", content:"What is in it?", images:[$img]}]}' \
    >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary @"$TEST_TMP/req.json")" 200 \
    "chat: $(body)"
}
prefilled() { metric vkllm_image_tokens_prefilled_total; }
chat "$wide"
first=$(jq -c '{c: .message.content, n: .prompt_eval_count, lp: .logprobs[0].logprob}' "$TEST_TMP/body")
n1=$(jq .n <<<"$first")
expect_eq "$(prefilled)" 16 "image rows prefilled by the first turn"
expect_eq "$(metric vkllm_images_encoded_total)" 1 "images encoded by the first turn"
# The next turn repeats the first (same image) with the answer, then asks again about it: the
# image's rows come from the prefix cache, nothing of it is prefilled again.
before=$(jq -nc --arg img "$wide" --arg a "$(jq -r .c <<<"$first")" \
  '[{role:"user", content:"What is in it?", images:[$img]}, {role:"assistant", content:$a}]')
jq -nc --argjson before "$before" --argjson o "$opts" \
  '{model:"g3v", stream:false, options:$o, messages:($before + [{role:"user", content:"And the colours?"}])}' \
  >"$TEST_TMP/req.json"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary @"$TEST_TMP/req.json")" 200 "turn 2: $(body)"
n2=$(jq .prompt_eval_count "$TEST_TMP/body")
expect_eq "$(prefilled)" 16 "image rows prefilled by the second turn (none)"
pass "the second turn about the same image prefilled none of it ($n2 new prompt tokens; the first turn $n1)"

# How far this answer's first-token logprob is from the first turn's (a request served from the
# prefix cache runs other kernels on other shapes: rounding, far below what a picture moves).
logprob_gap() {
  jq -n --argjson a "$(jq .logprobs[0].logprob "$TEST_TMP/body")" --argjson b "$(jq .lp <<<"$first")" \
    '($a - $b) | fabs | . * 1e6 | floor'
}
chat "$wide"
[ "$(logprob_gap)" -lt 1000 ] || fail "the same image moved the logprob by $(logprob_gap)e-6"
chat "$tall"
expect_eq "$(prefilled)" 32 "another image is prefilled"
[ "$(logprob_gap)" -ge 1000 ] || fail "another image moved the logprob by only $(logprob_gap)e-6"
pass "the same image answers alike, another image is another prompt"

# /api/generate takes images too.
req=$(jq -nc --arg img "$wide" --argjson o "$opts" '{model:"g3v", prompt:"Describe it.", images:[$img], stream:false, options:$o}')
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$req")" 200 "generate: $(body)"
jq -e '.eval_count == 4 and (.context | all(. >= 0))' "$TEST_TMP/body" >/dev/null || fail "generate: $(body)"

# Anthropic's Messages API: a base64 image block.
req=$(jq -nc --arg img "$wide" '{model:"g3v", max_tokens:4, messages:[{role:"user", content:[
  {type:"image", source:{type:"base64", media_type:"image/png", data:$img}},
  {type:"text", text:"What is in it?"}]}]}')
expect_eq "$(http_status POST "$VKLLM_URL/v1/messages" -d "$req")" 200 "messages: $(body)"
jq -e '.usage.output_tokens == 4 and (.content[0].text | length > 0)' "$TEST_TMP/body" >/dev/null ||
  fail "messages: $(body)"
pass "/api/generate and Anthropic's /v1/messages with an image"

# `vkllm run` reads an image path in the prompt, as `ollama run`.
out=$("$VKLLM_BIN" run g3v "What is in $TEST_TMP/wide.png ?" </dev/null 2>"$TEST_TMP/run.err") || fail "run: $(cat "$TEST_TMP/run.err")"
grep -q "Added image '$TEST_TMP/wide.png'" "$TEST_TMP/run.err" || fail "run did not add the image: $(cat "$TEST_TMP/run.err")"
[ -n "$out" ] || fail "run printed no answer"
pass "vkllm run sends an image named in the prompt"

# Refusals, each in its route's error shape.
bad='{"model":"g3v","messages":[{"role":"user","content":"x","images":["@@@"]}]}'
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$bad")" 400 "bad base64"
notpic=$(printf 'not a picture at all' | base64 -w0)
req=$(jq -nc --arg img "$notpic" '{model:"g3v", messages:[{role:"user", content:"x", images:[$img]}]}')
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$req")" 400 "not a picture"
jq -e '.error | test("image 0: ")' "$TEST_TMP/body" >/dev/null || fail "not a picture: $(body)"
req=$(jq -nc --arg u "data:image/png;base64,$notpic" \
  '{model:"g3v", messages:[{role:"user", content:[{type:"image_url", image_url:{url:$u}}]}]}')
expect_eq "$(http_status POST "$VKLLM_URL/v1/chat/completions" -d "$req")" 400 "openai not a picture"
jq -e '.error.message | test("image 0: ")' "$TEST_TMP/body" >/dev/null || fail "openai shape: $(body)"
pass "bad base64, a corrupt picture and (in vision.mjs) a remote URL are 400s"

node_client "$(dirname "$0")/vision.mjs" "$VKLLM_URL" g3v "$TEST_TMP/wide.png" || fail "npm clients"
pass "the npm ollama and openai clients stream answers about an image"

# Ollama's single-file Gemma 3 (engine/gguf/inline_projector.h): created from its one GGUF, it
# lists vision and answers about the image as the two-file twin does, token for token.
sed "s|^FROM .*mmproj.gguf$||; s|^FROM .*gemma3.gguf$|FROM $TEST_TMP/gemma3-ollama.gguf|" \
  "$TEST_TMP/Modelfile" >"$TEST_TMP/Modelfile.ollama"
"$VKLLM_BIN" create g3o -f "$TEST_TMP/Modelfile.ollama" >/dev/null 2>&1 || fail "create g3o"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"g3o"}')" 200 "show g3o"
jq -e '(.capabilities | index("vision")) and .projector_info == null' "$TEST_TMP/body" >/dev/null ||
  fail "g3o: $(jq -c '{capabilities, projector_info}' "$TEST_TMP/body")"
one_file() {  # MODEL: its answer about the wide image, with the first token's logprob
  jq -nc --arg m "$1" --arg img "$wide" --argjson o "$opts" \
    '{model:$m, stream:false, logprobs:true, options:$o,
      messages:[{role:"user", content:"What is in it?", images:[$img]}]}' >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary @"$TEST_TMP/req.json")" 200 \
    "chat $1: $(body)"
  jq -c '{c: .message.content, lp: .logprobs[0].logprob, n: .prompt_eval_count}' "$TEST_TMP/body"
}
got=$(one_file g3o)
# As the first turn of g3v above (the same request, also computed cold).
expect_eq "$(jq -c '{c, n}' <<<"$got")" "$(jq -c '{c, n}' <<<"$first")" "the single-file model's answer"
gap=$(jq -n --argjson a "$(jq .lp <<<"$got")" --argjson b "$(jq .lp <<<"$first")" '($a - $b) | fabs | . * 1e6 | floor')
[ "$gap" -lt 10 ] || fail "the single-file model's first logprob is $gap e-6 from its twin's"
pass "Ollama's single-file Gemma 3 (tower inside the GGUF) answers about an image as its twin"

# The projector's weights count with the model's (/api/ps, admission): g3v against the same text
# model created without its projector.
grep -v "mmproj.gguf" "$TEST_TMP/Modelfile" >"$TEST_TMP/Modelfile.text"
"$VKLLM_BIN" create g3t -f "$TEST_TMP/Modelfile.text" >/dev/null 2>&1 || fail "create g3t"
for m in g3v g3t; do
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" \
    -d "{\"model\":\"$m\",\"prompt\":\"hi\",\"stream\":false,\"options\":{\"num_predict\":1}}")" 200 "load $m"
done
curl -s "$VKLLM_URL/api/ps" >"$TEST_TMP/ps.json"
size_of() {
  jq -e --arg m "$1:latest" '.models[] | select(.name == $m) | .size' "$TEST_TMP/ps.json" ||
    fail "$1 is not loaded: $(jq -c "[.models[].name]" "$TEST_TMP/ps.json"); $(grep -E "g3t|unload|evict" "$VKLLM_LOG" | tail -5)"
}
with=$(size_of g3v) || exit 1
without=$(size_of g3t) || exit 1
expect_eq "$((with - without))" "$(stat -c %s "$TEST_TMP/mmproj.gguf")" \
  "/api/ps: g3v's size beyond its text model's"
pass "a projector's weights count in the model's size"

# Mistral 3 with a Pixtral projector: the image's rows depend on its size (the wide picture 11 x 7
# merged patches and 6 [IMG_BREAK] rows: 83; the tall one 3 x 5 and 4: 19), and a second turn
# about the same image prefills none of it.
"$VKLLM_BIN" dev make-model --arch mistral3 --shape test --type F16 --seed 50 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/m3.gguf" --projector "$TEST_TMP/m3-mmproj.gguf" --projector-shape test \
  >/dev/null || fail "make-model mistral3"
printf 'FROM %s\nFROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/m3.gguf" "$TEST_TMP/m3-mmproj.gguf" >"$TEST_TMP/Modelfile.m3"
"$VKLLM_BIN" create m3v -f "$TEST_TMP/Modelfile.m3" >/dev/null 2>&1 || fail "create m3v"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"m3v"}')" 200 "show m3v"
jq -e '.capabilities | index("vision")' "$TEST_TMP/body" >/dev/null ||
  fail "m3v: no vision capability: $(jq -c .capabilities "$TEST_TMP/body")"
m3_chat() {
  jq -nc --arg img "$1" --argjson o "$opts" \
    '{model:"m3v", stream:false, options:$o, messages:[{role:"user", content:"What is in it?", images:[$img]}]}' \
    >"$TEST_TMP/req.json"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" --data-binary @"$TEST_TMP/req.json")" 200 \
    "m3v chat: $(body)"
  jq -e '.eval_count == 4' "$TEST_TMP/body" >/dev/null || fail "m3v chat: $(body)"
}
m3_prefilled() { metric vkllm_image_tokens_prefilled_total m3v; }
m3_first=$(one_file m3v)
expect_eq "$(m3_prefilled)" 83 "m3v: the wide image's rows prefilled"
m3_chat "$tall"
expect_eq "$(m3_prefilled)" 102 "m3v: the tall image's rows prefilled"
m3_chat "$wide"
expect_eq "$(m3_prefilled)" 102 "m3v: the wide image again (prefix cache)"
pass "a mistral3 model with a pixtral projector answers about images of two sizes"

# Ollama's single-file Mistral 3 (Pixtral inside the GGUF: Q/K rows in Hugging Face's order, the
# [IMG_BREAK] row only in the text embeddings) answers as its two-file twin, token for token.
"$VKLLM_BIN" dev make-model --arch mistral3 --shape test --type F16 --seed 50 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/m3-ollama.gguf" --layout ollama --projector-shape test \
  >/dev/null || fail "make-model mistral3 --layout ollama"
printf 'FROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/m3-ollama.gguf" >"$TEST_TMP/Modelfile.m3o"
"$VKLLM_BIN" create m3o -f "$TEST_TMP/Modelfile.m3o" >/dev/null 2>&1 || fail "create m3o"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"m3o"}')" 200 "show m3o"
jq -e '(.capabilities | index("vision")) and .projector_info == null' "$TEST_TMP/body" >/dev/null ||
  fail "m3o: $(jq -c '{capabilities, projector_info}' "$TEST_TMP/body")"
got=$(one_file m3o)
expect_eq "$(jq -c '{c, n}' <<<"$got")" "$(jq -c '{c, n}' <<<"$m3_first")" "the single-file mistral3's answer"
gap=$(jq -n --argjson a "$(jq .lp <<<"$got")" --argjson b "$(jq .lp <<<"$m3_first")" '($a - $b) | fabs | . * 1e6 | floor')
[ "$gap" -lt 10 ] || fail "the single-file mistral3's first logprob is $gap e-6 from its twin's"
pass "Ollama's single-file Mistral 3 (Pixtral inside the GGUF) answers about an image as its twin"

# Qwen2.5-VL with its projector: one row per merged patch (the wide picture 11 x 7: 77; the tall
# one 3 x 5: 15), the second time from the prefix cache; and the raw prompt llama.cpp's mtmd was
# recorded on (tests/reference/vision/qwen2vl-prompt.json) continues with its greedy tokens, which
# needs the image's and the later text's M-RoPE positions (at plain positions the logits' cosine
# is 0.93).
"$VKLLM_BIN" dev make-model --arch qwen2vl --shape test --type F16 --seed 60 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/q2.gguf" --projector "$TEST_TMP/q2-mmproj.gguf" --projector-shape test \
  >/dev/null || fail "make-model qwen2vl"
printf 'FROM %s\nFROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/q2.gguf" "$TEST_TMP/q2-mmproj.gguf" >"$TEST_TMP/Modelfile.q2"
"$VKLLM_BIN" create q2v -f "$TEST_TMP/Modelfile.q2" >/dev/null 2>&1 || fail "create q2v"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"q2v"}')" 200 "show q2v"
jq -e '.capabilities | index("vision")' "$TEST_TMP/body" >/dev/null ||
  fail "q2v: no vision capability: $(jq -c .capabilities "$TEST_TMP/body")"
q2_prefilled() { metric vkllm_image_tokens_prefilled_total q2v; }
q2_first=$(one_file q2v)
expect_eq "$(q2_prefilled)" 77 "q2v: the wide image's rows prefilled"
one_file q2v >/dev/null
expect_eq "$(q2_prefilled)" 77 "q2v: the wide image again (prefix cache)"
req=$(jq -nc --arg img "$wide" \
  '{model:"q2v", raw:true, prompt:"Describe the picture below.\n[img-0]\nWhat is in it?",
    images:[$img], stream:false, options:{temperature:0, num_predict:3}}')
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$req")" 200 "q2v generate: $(body)"
answer=$(jq -r '.response | ltrimstr(" ")' "$TEST_TMP/body")  # detokenize drops a leading space
req=$(jq -c '{model:"q2v", tokens:.greedy_tokens[:3]}' "$vision/qwen2vl-prompt.json")
expect_eq "$(http_status POST "$VKLLM_URL/api/detokenize" -d "$req")" 200 "q2v detokenize: $(body)"
expect_eq "$answer" "$(jq -r .content "$TEST_TMP/body")" "q2v: the greedy tokens after the image"
pass "a qwen2vl model with a Qwen2.5-VL projector answers about an image as llama.cpp's mtmd"

# Ollama's single-file Qwen2.5-VL (qwen25vl: the tower inside the GGUF under Ollama's names)
# answers about an image as its two-file twin q2v, token for token.
"$VKLLM_BIN" dev make-model --arch qwen2vl --shape test --type F16 --seed 60 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/q2-ollama.gguf" --layout ollama --projector-shape test \
  >/dev/null || fail "make-model qwen2vl --layout ollama"
printf 'FROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/q2-ollama.gguf" >"$TEST_TMP/Modelfile.q2o"
"$VKLLM_BIN" create q2o -f "$TEST_TMP/Modelfile.q2o" >/dev/null 2>&1 || fail "create q2o"
got=$(one_file q2o)
# As q2v's first (cold) turn above.
expect_eq "$(jq -c '{c, n}' <<<"$got")" "$(jq -c '{c, n}' <<<"$q2_first")" "the single-file qwen25vl's answer"
gap=$(jq -n --argjson a "$(jq .lp <<<"$got")" --argjson b "$(jq .lp <<<"$q2_first")" '($a - $b) | fabs | . * 1e6 | floor')
[ "$gap" -lt 10 ] || fail "the single-file qwen25vl's first logprob is $gap e-6 from its twin's"
pass "Ollama's single-file Qwen2.5-VL (its tower inside the GGUF) answers about an image as its twin"

# Gemma 4 with its gemma4v projector: one row per 3x3-pooled cell (the wide picture, resized to
# 528x336 as llama.cpp does: 11 x 7 = 77), the second time from the prefix cache; the raw prompt
# llama.cpp's mtmd was recorded on (tests/reference/vision/gemma4-prompt.json) continues with its
# greedy tokens, which needs the image's two-way attention in the local layers (decoded causally
# the logits' cosine is 0.94).
"$VKLLM_BIN" dev make-model --arch gemma4 --shape test-swa-narrow --type F16 --seed 70 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/g4.gguf" --projector "$TEST_TMP/g4-mmproj.gguf" --projector-shape test \
  >/dev/null || fail "make-model gemma4"
printf 'FROM %s\nFROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/g4.gguf" "$TEST_TMP/g4-mmproj.gguf" >"$TEST_TMP/Modelfile.g4"
"$VKLLM_BIN" create g4v -f "$TEST_TMP/Modelfile.g4" >/dev/null 2>&1 || fail "create g4v"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"g4v"}')" 200 "show g4v"
jq -e '.capabilities | index("vision")' "$TEST_TMP/body" >/dev/null ||
  fail "g4v: no vision capability: $(jq -c .capabilities "$TEST_TMP/body")"
g4_prefilled() { metric vkllm_image_tokens_prefilled_total g4v; }
g4_first=$(one_file g4v)
expect_eq "$(g4_prefilled)" 77 "g4v: the wide image's rows prefilled"
one_file g4v >/dev/null
expect_eq "$(g4_prefilled)" 77 "g4v: the wide image again (prefix cache)"
req=$(jq -nc --arg img "$wide" \
  '{model:"g4v", raw:true, prompt:"Describe the picture below.\n[img-0]\nWhat is in it?",
    images:[$img], stream:false, options:{temperature:0, num_predict:3}}')
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$req")" 200 "g4v generate: $(body)"
answer=$(jq -r '.response | ltrimstr(" ")' "$TEST_TMP/body")
req=$(jq -c '{model:"g4v", tokens:.greedy_tokens[:3]}' "$vision/gemma4-prompt.json")
expect_eq "$(http_status POST "$VKLLM_URL/api/detokenize" -d "$req")" 200 "g4v detokenize: $(body)"
expect_eq "$answer" "$(jq -r '.content | ltrimstr(" ")' "$TEST_TMP/body")" "g4v: the greedy tokens after the image"
pass "a gemma4 model with a gemma4v projector answers about an image as llama.cpp's mtmd"

# Ollama's single-file Gemma 4 (the gemma4v tower inside the GGUF, gemma4.vision.* keys, the clamp
# bounds also packed in v.clamp_data): created from its one GGUF, it lists vision and answers
# about an image as its two-file twin g4v, token for token.
"$VKLLM_BIN" dev make-model --arch gemma4 --shape test-swa-narrow --type F16 --seed 70 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/g4-ollama.gguf" --layout ollama --projector-shape test \
  >/dev/null || fail "make-model gemma4 --layout ollama"
sed "s|^FROM .*g4-mmproj.gguf$||; s|^FROM .*g4.gguf$|FROM $TEST_TMP/g4-ollama.gguf|" \
  "$TEST_TMP/Modelfile.g4" >"$TEST_TMP/Modelfile.g4o"
"$VKLLM_BIN" create g4o -f "$TEST_TMP/Modelfile.g4o" >/dev/null 2>&1 || fail "create g4o"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"g4o"}')" 200 "show g4o"
jq -e '(.capabilities | index("vision")) and .projector_info == null' "$TEST_TMP/body" >/dev/null ||
  fail "g4o: $(jq -c '{capabilities, projector_info}' "$TEST_TMP/body")"
got=$(one_file g4o)
expect_eq "$(jq -c '{c, n}' <<<"$got")" "$(jq -c '{c, n}' <<<"$g4_first")" "the single-file gemma4's answer"
gap=$(jq -n --argjson a "$(jq .lp <<<"$got")" --argjson b "$(jq .lp <<<"$g4_first")" '($a - $b) | fabs | . * 1e6 | floor')
[ "$gap" -lt 10 ] || fail "the single-file gemma4's first logprob is $gap e-6 from its twin's"
pass "Ollama's single-file Gemma 4 (its tower inside the GGUF) answers about an image as its twin"

# Qwen3-VL with its projector: one row per merged patch of 16 px patches (the wide picture 9 x 6:
# 54), each row carrying the deepstack slice the text model's first layer adds; the second time
# from the prefix cache; and mtmd's recorded raw prompt (tests/reference/vision/qwen3vl-prompt.json)
# continues with its greedy tokens (interleaved M-RoPE positions and the deepstack slices: without
# either the logits' cosine is 0.90 / 0.93).
"$VKLLM_BIN" dev make-model --arch qwen3vl --shape test --type F16 --seed 70 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/q3.gguf" --projector "$TEST_TMP/q3-mmproj.gguf" --projector-shape test \
  >/dev/null || fail "make-model qwen3vl"
printf 'FROM %s\nFROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/q3.gguf" "$TEST_TMP/q3-mmproj.gguf" >"$TEST_TMP/Modelfile.q3"
"$VKLLM_BIN" create q3v -f "$TEST_TMP/Modelfile.q3" >/dev/null 2>&1 || fail "create q3v"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"q3v"}')" 200 "show q3v"
jq -e '.capabilities | index("vision")' "$TEST_TMP/body" >/dev/null ||
  fail "q3v: no vision capability: $(jq -c .capabilities "$TEST_TMP/body")"
q3_prefilled() { metric vkllm_image_tokens_prefilled_total q3v; }
q3_first=$(one_file q3v)
expect_eq "$(q3_prefilled)" 54 "q3v: the wide image's rows prefilled"
one_file q3v >/dev/null
expect_eq "$(q3_prefilled)" 54 "q3v: the wide image again (prefix cache)"
req=$(jq -nc --arg img "$wide" \
  '{model:"q3v", raw:true, prompt:"Describe the picture below.\n[img-0]\nWhat is in it?",
    images:[$img], stream:false, options:{temperature:0, num_predict:3}}')
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$req")" 200 "q3v generate: $(body)"
answer=$(jq -r '.response | ltrimstr(" ")' "$TEST_TMP/body")
req=$(jq -c '{model:"q3v", tokens:.greedy_tokens[:3]}' "$vision/qwen3vl-prompt.json")
expect_eq "$(http_status POST "$VKLLM_URL/api/detokenize" -d "$req")" 200 "q3v detokenize: $(body)"
expect_eq "$answer" "$(jq -r .content "$TEST_TMP/body")" "q3v: the greedy tokens after the image"
pass "a qwen3vl model with a Qwen3-VL projector answers about an image as llama.cpp's mtmd"

# Ollama's single-file Qwen3-VL (qwen3vl with the tower inside under Hugging Face's names, the
# RoPE sections as rope.mrope_section) answers about an image as its two-file twin q3v.
"$VKLLM_BIN" dev make-model --arch qwen3vl --shape test --type F16 --seed 70 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" \
  -o "$TEST_TMP/q3-ollama.gguf" --layout ollama --projector-shape test \
  >/dev/null || fail "make-model qwen3vl --layout ollama"
printf 'FROM %s\nTEMPLATE """{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:"""\n' \
  "$TEST_TMP/q3-ollama.gguf" >"$TEST_TMP/Modelfile.q3o"
"$VKLLM_BIN" create q3o -f "$TEST_TMP/Modelfile.q3o" >/dev/null 2>&1 || fail "create q3o"
got=$(one_file q3o)
expect_eq "$(jq -c '{c, n}' <<<"$got")" "$(jq -c '{c, n}' <<<"$q3_first")" "the single-file qwen3vl's answer"
gap=$(jq -n --argjson a "$(jq .lp <<<"$got")" --argjson b "$(jq .lp <<<"$q3_first")" '($a - $b) | fabs | . * 1e6 | floor')
[ "$gap" -lt 10 ] || fail "the single-file qwen3vl's first logprob is $gap e-6 from its twin's"
pass "Ollama's single-file Qwen3-VL (its tower inside the GGUF) answers about an image as its twin"
