#!/usr/bin/env bash
# A model split by layers across Vulkan devices, here lavapipe named twice in a VKLLM_DEVICE list:
# two Vulkan devices, each with its own memory and queue, on one physical device. A model that fits
# on the first device stays there; with OLLAMA_SCHED_SPREAD=1 it loads with its layers split,
# generates the greedy text it generates on one device, /api/ps lists each device's share and
# /metrics has them; `vkllm bench --device` takes the list too. (Bit-exact logits of a split:
# engine tests SplitModel.*.)
source "$(dirname "$0")/lib.sh"
# One pipeline cache for every server and the bench: each compiles only what the last did not.
export VKLLM_PIPELINE_CACHE=$TEST_TMP/pipeline-cache

# Two layers (the shared tiny fixture has one: a device list then leaves it on the first device).
gguf=$TEST_TMP/tiny2.gguf
"$VKLLM_BIN" dev make-model --arch llama --shape tiny --seed 44 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$gguf" >/dev/null ||
  fail "make-model"
printf 'FROM %s\nTEMPLATE {{ .Prompt }}\n' "$gguf" >"$TEST_TMP/Modelfile.tiny"
# A vision model (gemma3 and its projector): a split model's first stage takes the image rows.
"$VKLLM_BIN" dev make-model --arch gemma3 --shape test --seed 40 \
  --vocab "$VKLLM_SOURCE_DIR/tests/reference/families/spm-1k-vocab.gguf" -o "$TEST_TMP/g3.gguf" \
  --projector "$TEST_TMP/mmproj.gguf" --projector-shape test:1 >/dev/null || fail "make-model gemma3"
printf 'FROM %s\nFROM %s\n' "$TEST_TMP/g3.gguf" "$TEST_TMP/mmproj.gguf" >"$TEST_TMP/Modelfile.g3v"
vreq=$(jq -nc --arg img "$(base64 -w0 "$VKLLM_SOURCE_DIR/tests/reference/vision/wide-300x200.png")" \
  '{model:"g3v", stream:false, options:{temperature:0, num_predict:4},
    messages:[{role:"user", content:"What is in it?", images:[$img]}]}')

greq='{"model":"tiny","prompt":"The quick brown fox","stream":false,"options":{"temperature":0,"num_predict":8}}'
# greedy NAME [env...]: starts a server, creates tiny, prints its greedy text to $TEST_TMP/NAME.txt
greedy() {
  local name=$1
  vkllm_start "$@"
  "$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile.tiny" >/dev/null 2>&1 || fail "create tiny ($name)"
  expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$greq")" 200 "generate ($name): $(body)"
  jq -e '.done_reason == "length" and .eval_count == 8' "$TEST_TMP/body" >/dev/null ||
    fail "generate ($name): $(body)"
  jq -j .response "$TEST_TMP/body" >"$TEST_TMP/$name.txt"
  "$VKLLM_BIN" create g3v -f "$TEST_TMP/Modelfile.g3v" >/dev/null 2>&1 || fail "create g3v ($name)"
  expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$vreq")" 200 "image chat ($name): $(body)"
  jq -c '[.message.content, .prompt_eval_count, .eval_count]' "$TEST_TMP/body" >"$TEST_TMP/$name-image.txt"
}

# Pipelines compile as steps need them except in the split server (its warm-up nests stages).
greedy one VKLLM_DEVICE=llvmpipe,llvmpipe VKLLM_QUIET=1 VKLLM_WARM_UP=0
grep -q 'models run on Vulkan devices llvmpipe,llvmpipe, models larger than device llvmpipe split' \
  "$VKLLM_LOG" || fail "no device list line in the log: $(head -3 "$VKLLM_LOG")"
! grep -q 'layers split' "$VKLLM_LOG" || fail "a model that fits on the first device was split"
jq -e '.models | all(has("devices") | not)' <(curl -s "$VKLLM_URL/api/ps") >/dev/null ||
  fail "a model on one device lists no devices"
vkllm_stop "$VKLLM_PID"

greedy split VKLLM_DEVICE=llvmpipe,llvmpipe OLLAMA_SCHED_SPREAD=1 VKLLM_QUIET=1
grep -q 'models run on Vulkan devices llvmpipe,llvmpipe, every model split by layers' "$VKLLM_LOG" ||
  fail "no split device line in the log: $(head -3 "$VKLLM_LOG")"
grep -Eq 'loaded tiny:latest .*layers split [0-9]+ on device llvmpipe \+ [0-9]+ on device llvmpipe' \
  "$VKLLM_LOG" || fail "the model did not load split: $(grep loaded "$VKLLM_LOG")"
[ -s "$TEST_TMP/one.txt" ] || fail "empty generation on one device"
expect_eq "$(cat "$TEST_TMP/split.txt")" "$(cat "$TEST_TMP/one.txt")" \
  "greedy text split across two devices equals one device's"
expect_eq "$(cat "$TEST_TMP/split-image.txt")" "$(cat "$TEST_TMP/one-image.txt")" \
  "an image chat split across two devices answers as one device's"
curl -s "$VKLLM_URL/api/ps" >"$TEST_TMP/ps.json"
jq -e '.models | length == 2 and all(.[]; (.devices | length) == 2 and (.devices | all(.size_vram > 0))
       and ([.devices[].size_vram] | add) == .size)' "$TEST_TMP/ps.json" >/dev/null ||
  fail "ps of a split model: $(cat "$TEST_TMP/ps.json")"
curl -s "$VKLLM_URL/metrics" >"$TEST_TMP/metrics.txt"
expect_eq "$(grep -c '^vkllm_model_device_bytes_by_device{.*model="tiny:latest"' "$TEST_TMP/metrics.txt")" 2 \
  "per-device bytes in /metrics: $(grep by_device "$TEST_TMP/metrics.txt")"
pass "a device list keeps a small model on the first; OLLAMA_SCHED_SPREAD splits it: same greedy text (and image answer), per-device /api/ps and /metrics"
vkllm_stop "$VKLLM_PID"

# By rows (VKLLM_SPLIT_MODE=row): the same greedy text as on one device (the devices' partial
# sums are added in another order: logits within 1e-3 of a row's spread, engine tests
# RowSplit.*), each device's share in /api/ps; a model the row split does not run (gemma3) is
# refused at load, naming why.
vkllm_start row VKLLM_DEVICE=llvmpipe,llvmpipe OLLAMA_SCHED_SPREAD=1 VKLLM_SPLIT_MODE=row VKLLM_QUIET=1 \
  VKLLM_WARM_UP=0
"$VKLLM_BIN" create tiny -f "$TEST_TMP/Modelfile.tiny" >/dev/null 2>&1 || fail "create tiny (row)"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "$greq")" 200 "generate (row): $(body)"
expect_eq "$(jq -j .response "$TEST_TMP/body")" "$(cat "$TEST_TMP/one.txt")" \
  "greedy text split by rows equals one device's"
grep -Eq 'loaded tiny:latest .*rows split over devices llvmpipe \+ llvmpipe' "$VKLLM_LOG" ||
  fail "the model did not load split by rows: $(grep loaded "$VKLLM_LOG")"
jq -e '.models | length == 1 and (.[0].devices | length) == 2 and
       ([.[0].devices[].size_vram] | add) == .[0].size' <(curl -s "$VKLLM_URL/api/ps") >/dev/null ||
  fail "ps of a model split by rows: $(curl -s "$VKLLM_URL/api/ps")"
"$VKLLM_BIN" create g3v -f "$TEST_TMP/Modelfile.g3v" >/dev/null 2>&1 || fail "create g3v (row)"
expect_eq "$(http_status POST "$VKLLM_URL/api/chat" -d "$vreq")" 500 "gemma3 split by rows: $(body)"
jq -e '.error | contains("row split cannot run this model") and contains("gemma3")' \
  "$TEST_TMP/body" >/dev/null || fail "the refusal does not say why: $(body)"
pass "VKLLM_SPLIT_MODE=row splits a llama by rows (same greedy text, per-device /api/ps) and refuses gemma3"
vkllm_stop "$VKLLM_PID"

VKLLM_QUIET=1 VKLLM_WARM_UP=0 "$VKLLM_BIN" bench --model "$gguf" --device llvmpipe,llvmpipe --prompt 32 --gen 4 \
  --batch 1,2 --json >"$TEST_TMP/bench.json" 2>"$TEST_TMP/bench.err" ||
  fail "bench across two devices: $(cat "$TEST_TMP/bench.err")"
jq -e '(.layer_split | length) == 2 and (.layer_split | add) == .n_layer
       and (.device_bytes_by_device | length) == 2 and .decode[1].tok_per_s > 0' \
  "$TEST_TMP/bench.json" >/dev/null || fail "bench of a split model: $(cat "$TEST_TMP/bench.json")"
pass "vkllm bench --device llvmpipe,llvmpipe reports the layer split"
