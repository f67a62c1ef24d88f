#!/usr/bin/env bash
# Draft models (Ollama's DRAFT), as a new user meets them: tolstoy-mem (real weights, memorised
# War and Peace) created with tolstoy-gen (same vocabulary) as its draft through curl's
# /api/create draft_files, the npm `ollama` client and `vkllm create -f` with a Modelfile DRAFT;
# /api/show's Modelfile names it; greedy chat answers are the same text with the draft as
# without, and /metrics counts drafted tokens the target accepted. Refused at create with a 400:
# draft_quantize without a draft, draft_quantize of a quantized draft, and a draft whose
# vocabulary differs (named); draft_quantize of an F16 draft stores a quantized draft layer. A
# hybrid draft (LFM2's short convolutions, random weights) gives the same greedy text too.
source "$(dirname "$0")/lib.sh"

models=$VKLLM_SHARED_DIR/testdata/models
vocab=$VKLLM_SHARED_DIR/testdata/vocab
target=$models/tolstoy-mem-q4_k_m.gguf draft=$models/tolstoy-gen-q8_0.gguf
# Unquantized drafts: the llama-spm vocabulary (tolstoy's) and Phi-3's (32064 tokens).
"$VKLLM_BIN" dev make-model --shape tiny --vocab "$vocab/ggml-vocab-llama-spm.gguf" --seed 1 \
  -o "$TEST_TMP/spm-f16.gguf" >/dev/null || fail "make-model spm"
"$VKLLM_BIN" dev make-model --shape tiny --vocab "$vocab/ggml-vocab-phi-3.gguf" --seed 1 \
  -o "$TEST_TMP/phi3-f16.gguf" >/dev/null || fail "make-model phi-3"
"$VKLLM_BIN" dev make-model --arch lfm2 --shape test --vocab "$vocab/ggml-vocab-llama-spm.gguf" \
  --seed 1 -o "$TEST_TMP/lfm2-f16.gguf" >/dev/null || fail "make-model lfm2"

vkllm_start server
td=$(upload_blob "$target") dd=$(upload_blob "$draft") spm=$(upload_blob "$TEST_TMP/spm-f16.gguf")
phi=$(upload_blob "$TEST_TMP/phi3-f16.gguf") lfm2=$(upload_blob "$TEST_TMP/lfm2-f16.gguf")
create() {  # create NAME DRAFT_DIGEST [DRAFT_QUANTIZE]: prints the status; body in $TEST_TMP/body
  local req
  req=$(jq -nc --arg m "$1" --arg t "$td" --arg d "$2" --arg q "${3:-}" \
    '{model:$m, files:{"t.gguf":$t}, template:"{{ .Prompt }}", stream:false}
     + (if $d == "" then {} else {draft_files:{"d.gguf":$d}} end)
     + (if $q == "" then {} else {draft_quantize:$q} end)')
  http_status POST "$VKLLM_URL/api/create" -d "$req"
}
expect_eq "$(create plain "")" 200 "create plain: $(body)"
expect_eq "$(create nodraft "" q8_0)" 400 "draft_quantize without a draft"
expect_eq "$(jq -r .error "$TEST_TMP/body")" "--draft-quantize requires a DRAFT model" "its error"
expect_eq "$(create requant "$dd" q4_K_M)" 400 "draft_quantize of a Q8_0 draft"
expect_eq "$(jq -r .error "$TEST_TMP/body")" \
  "draft quantization requires an unquantized draft model, got Q8_0" "its error"
expect_eq "$(create phi "$phi")" 400 "a draft with Phi-3's vocabulary"
grep -q "vocabulary differs.*32064 tokens in the draft, 32000 in the model" "$TEST_TMP/body" ||
  fail "no clear vocabulary error: $(body)"
expect_eq "$(create hybrid "$lfm2")" 200 "a hybrid draft: $(body)"
expect_eq "$(create quantized "$spm" q8_0)" 200 "draft_quantize of an F16 draft: $(body)"
layer=$(curl -s "$VKLLM_URL/api/show" -d '{"model":"quantized"}' | jq -r .modelfile |
  sed -n 's/^DRAFT .*sha256-\([0-9a-f]*\).*/\1/p')
[ -n "$layer" ] && [ "sha256:$layer" != "$spm" ] || fail "draft layer not quantized: '$layer'"
pass "create refusals: draft_quantize alone, of a quantized draft, another vocabulary; F16 draft quantized"

node_client "$(dirname "$0")/draft_model.mjs" "$VKLLM_URL" "$td" "$dd" || fail "npm ollama client"
drafted=$(metric vkllm_speculative_drafted_tokens_total 'draft="model"') || true
accepted=$(metric vkllm_speculative_accepted_tokens_total 'draft="model"') || true
[ "$drafted" -gt 0 ] && [ "$accepted" -gt 0 ] ||
  fail "/metrics: drafted $drafted, accepted $accepted by the draft model"
pass "chat with the draft: $accepted of $drafted drafted tokens accepted"

printf 'FROM %s\nDRAFT %s\nTEMPLATE {{ .Prompt }}\n' "$target" "$draft" >"$TEST_TMP/Modelfile"
"$VKLLM_BIN" create cli-drafted -f "$TEST_TMP/Modelfile" >"$TEST_TMP/create.out" 2>&1 ||
  fail "vkllm create with DRAFT: $(cat "$TEST_TMP/create.out")"
# DRAFT naming an installed model takes its weights.
expect_eq "$(http_status POST "$VKLLM_URL/api/create" \
  -d "{\"model\":\"gen\",\"files\":{\"g.gguf\":\"$dd\"},\"stream\":false}")" 200 "create gen: $(body)"
printf 'FROM plain\nDRAFT gen\n' >"$TEST_TMP/Modelfile.byname"
"$VKLLM_BIN" create by-name -f "$TEST_TMP/Modelfile.byname" >"$TEST_TMP/create.out" 2>&1 ||
  fail "vkllm create with DRAFT <model>: $(cat "$TEST_TMP/create.out")"
for m in cli-drafted by-name; do
  "$VKLLM_BIN" show --modelfile "$m" | grep -q "^DRAFT .*sha256-${dd#sha256:}" ||
    fail "$m: show --modelfile has no DRAFT of tolstoy-gen: $("$VKLLM_BIN" show --modelfile "$m")"
done
q='{"model":"M","prompt":"Prince Andrew","raw":true,"stream":false,"options":{"temperature":0,"num_predict":16}}'
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "${q/M/plain}")" 200 "plain: $(body)"
want=$(jq -r .response "$TEST_TMP/body")
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "${q/M/cli-drafted}")" 200 "drafted: $(body)"
expect_eq "$(jq -r .response "$TEST_TMP/body")" "$want" "greedy text of the CLI-created model"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d "${q/M/hybrid}")" 200 "hybrid: $(body)"
expect_eq "$(jq -r .response "$TEST_TMP/body")" "$want" "greedy text with the hybrid draft"
pass "vkllm create -f with DRAFT <file> and DRAFT <model>, a hybrid DRAFT; the same greedy text"
