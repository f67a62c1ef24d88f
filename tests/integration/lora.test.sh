#!/usr/bin/env bash
# LoRA adapters through the server: `vkllm dev make-model` / `make-lora` regenerate the fixtures
# of tests/reference/lora bit for bit (sha256), `vkllm create` takes a Modelfile ADAPTER and the
# npm `ollama` client /api/create's `adapters` map, /api/show lists the adapter, and the adapted
# model's greedy continuation is llama.cpp's with --lora (CPU backend here, as a server without a
# GPU runs). Adapters for another architecture or shape, or files that are no adapter, are 400s.
source "$(dirname "$0")/lib.sh"

case_file=$VKLLM_SOURCE_DIR/tests/reference/lora/lora-llama-f16.json
param() { python3 -c "import json,sys; c=json.load(open('$case_file')); print($1)"; }
base=$TEST_TMP/base.gguf lora=$TEST_TMP/lora.gguf

"$VKLLM_BIN" dev make-model --arch "$(param 'c["base"]["arch"]')" --shape "$(param 'c["base"]["shape"]')" \
  --type "$(param 'c["base"]["type"]')" --seed "$(param 'c["base"]["seed"]')" \
  --vocab "$VKLLM_SHARED_DIR/testdata/$(param 'c["base"]["vocab"]')" -o "$base" >/dev/null ||
  fail "make-model"
"$VKLLM_BIN" dev make-lora --base "$base" --rank "$(param 'c["adapter"]["rank"]')" \
  --alpha "$(param 'c["adapter"]["alpha"]')" --type "$(param 'c["adapter"]["type"]')" \
  --seed "$(param 'c["adapter"]["seed"]')" --targets "$(param '",".join(c["adapter"]["targets"])')" \
  -o "$lora" >/dev/null || fail "make-lora"
expect_eq "$(sha256sum "$base" | cut -d' ' -f1)" "$(param 'c["base"]["sha256"]')" "base fixture sha256"
expect_eq "$(sha256sum "$lora" | cut -d' ' -f1)" "$(param 'c["adapter"]["sha256"]')" "adapter fixture sha256"
pass "make-model and make-lora regenerate the recorded fixtures"

# Mismatched adapters: one for a qwen2 model of the same shape, one for a narrower llama.
"$VKLLM_BIN" dev make-model --arch qwen2 --shape tiny --seed 1 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$TEST_TMP/qwen.gguf" >/dev/null
"$VKLLM_BIN" dev make-lora --base "$TEST_TMP/qwen.gguf" -o "$TEST_TMP/qwen-lora.gguf" >/dev/null
"$VKLLM_BIN" dev make-model --arch llama --shape 128x2x4x2 --seed 1 \
  --vocab "$VKLLM_SHARED_DIR/testdata/vocab/ggml-vocab-llama-spm.gguf" -o "$TEST_TMP/narrow.gguf" >/dev/null
"$VKLLM_BIN" dev make-lora --base "$TEST_TMP/narrow.gguf" -o "$TEST_TMP/narrow-lora.gguf" >/dev/null

vkllm_start
printf 'FROM %s\n' "$base" >"$TEST_TMP/Modelfile.base"
"$VKLLM_BIN" create base -f "$TEST_TMP/Modelfile.base" >/dev/null 2>&1 || fail "vkllm create base"
printf 'FROM %s\nADAPTER %s\n' "$base" "$lora" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create adapted -f "$TEST_TMP/Modelfile" >"$TEST_TMP/create.out" 2>&1 ||
  fail "vkllm create with ADAPTER: $(cat "$TEST_TMP/create.out")"
"$VKLLM_BIN" show adapted --modelfile | grep -q '^ADAPTER ' || fail "show --modelfile lists no ADAPTER"
pass "vkllm create with a Modelfile ADAPTER"

for bad in qwen-lora narrow-lora; do
  printf 'FROM base\nADAPTER %s\n' "$TEST_TMP/$bad.gguf" >"$TEST_TMP/Modelfile.$bad"
  if "$VKLLM_BIN" create "bad-$bad" -f "$TEST_TMP/Modelfile.$bad" >"$TEST_TMP/$bad.out" 2>&1; then
    fail "create with $bad succeeded"
  fi
done
grep -q "invalid adapter: the adapter is for architecture 'qwen2', the model is 'llama'" \
  "$TEST_TMP/qwen-lora.out" || fail "qwen2 adapter error: $(cat "$TEST_TMP/qwen-lora.out")"
grep -q "does not fit the model's" "$TEST_TMP/narrow-lora.out" ||
  fail "shape error: $(cat "$TEST_TMP/narrow-lora.out")"
pass "vkllm create refuses adapters of another architecture or shape"

lora_digest=$(upload_blob "$lora")
qwen_digest=$(upload_blob "$TEST_TMP/qwen-lora.gguf")
base_digest=$(upload_blob "$base")
node_client "$(dirname "$0")/lora.mjs" "$VKLLM_URL" "$case_file" "$lora_digest" "$qwen_digest" \
  "$base_digest" || fail "npm ollama with an adapter"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 200 "tags after the refused creates"
body | python3 -c "import json,sys; n=[m['name'] for m in json.load(sys.stdin)['models']]; \
  assert not any(x.startswith('bad-') or x.startswith('npm-bad') for x in n), n" ||
  fail "a refused create left a model behind"
pass "npm ollama: create with adapters, show, generate and chat match llama.cpp --lora"
