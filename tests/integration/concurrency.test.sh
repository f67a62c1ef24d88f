#!/usr/bin/env bash
# Many users at once: 32 simultaneous greedy streams each produce exactly what they produce alone,
# also under a KV budget small enough to force preemption; a full queue answers 503; two models
# are served at the same time.
source "$(dirname "$0")/lib.sh"

tiny=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
ref=$VKLLM_SHARED_DIR/testdata/models/ref-llama-q4_k_m.gguf

create_from() {  # create_from NAME GGUF
  local d=sha256:$(sha256sum "$2" | cut -d' ' -f1)
  curl -s -o /dev/null -X POST "$VKLLM_URL/api/blobs/$d" --data-binary "@$2"
  local req
  req=$(jq -nc --arg m "$1" --arg d "$d" '{model:$m, files:{"m.gguf":$d}, template:"{{ .Prompt }}", stream:false}')
  expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create $1: $(body)"
}

N=32
request() {  # request I MODEL N_PREDICT: one greedy generation, prints its text
  jq -nc --arg p "Story $1: once upon a time in land $(( $1 * 7919 % 1000 ))," --arg m "$2" --argjson n "$3" \
    '{model:$m, prompt:$p, stream:false, options:{temperature:0, num_predict:$n}}' |
    curl -s "$VKLLM_URL/api/generate" -d @- | jq -j '.response // ("ERROR: " + .error)'
}
export -f request
run_parallel() {  # run_parallel DIR MODEL N_PREDICT
  mkdir -p "$1"
  local pids=() i
  for i in $(seq 1 $N); do
    request "$i" "$2" "$3" >"$1/$i" &
    pids+=($!)
  done
  wait "${pids[@]}"  # not a bare wait: the server is a background job too
}

# --- reference outputs, one request at a time ---
vkllm_start main
create_from tiny "$tiny"
mkdir -p "$TEST_TMP/alone"
for i in $(seq 1 $N); do request "$i" tiny 24 >"$TEST_TMP/alone/$i"; done
grep -l ERROR "$TEST_TMP/alone"/* && fail "errors alone"

run_parallel "$TEST_TMP/together" tiny 24
for i in $(seq 1 $N); do
  cmp -s "$TEST_TMP/alone/$i" "$TEST_TMP/together/$i" ||
    fail "stream $i differs when batched: '$(cat "$TEST_TMP/together/$i")' vs '$(cat "$TEST_TMP/alone/$i")'"
done
steps=$(metric vkllm_step_tokens_count 'model="tiny:latest"')
tokens=$(metric vkllm_step_tokens_sum 'model="tiny:latest"')
[ "$(( tokens / steps ))" -ge 2 ] || fail "no batching: $tokens tokens in $steps steps"
pass "$N simultaneous greedy streams equal their solo outputs ($tokens tokens in $steps steps)"

# --- requests sharing a cold prefix, all at once: one computes it, the others wait and reuse it ---
doc="Document $RANDOM:"
for i in $(seq 1 150); do doc+=" line $i of the shared report says $((i * 37 % 101)) things;"; done
shared() {  # shared I: a question about the document, its text
  jq -nc --arg p "$doc Question $1: what is on line $1?" \
    '{model:"tiny", prompt:$p, stream:false, options:{temperature:0, num_predict:2}}' |
    curl -s "$VKLLM_URL/api/generate" -d @- | jq -c '[.prompt_eval_count, .response // .error]'
}
prompt0=$(metric vkllm_prompt_tokens_total 'model="tiny:latest"')
eval0=$(metric vkllm_prompt_eval_tokens_total 'model="tiny:latest"')
pids=()
for i in $(seq 1 16); do shared "$i" >"$TEST_TMP/shared$i" & pids+=($!); done
wait "${pids[@]}"
prompted=$(( $(metric vkllm_prompt_tokens_total 'model="tiny:latest"') - prompt0 ))
evaluated=$(( $(metric vkllm_prompt_eval_tokens_total 'model="tiny:latest"') - eval0 ))
# 16 prompts of ~2k tokens sharing all but ~10: computed once, the rest from the prefix cache.
[ "$prompted" -gt 16000 ] || fail "the shared prompts are $prompted tokens"
[ $(( evaluated * 8 )) -le "$prompted" ] ||
  fail "16 requests sharing a cold prefix computed $evaluated of their $prompted prompt tokens"
pass "16 requests sharing a cold prefix at once computed $evaluated of their $prompted prompt tokens"

# --- two models at once ---
create_from ref "$ref"
request 1 ref 16 >"$TEST_TMP/ref.txt" &
p1=$!
request 2 tiny 16 >"$TEST_TMP/tiny.txt" &
wait $p1 $!
grep -q ERROR "$TEST_TMP/ref.txt" "$TEST_TMP/tiny.txt" && fail "two models: $(cat "$TEST_TMP"/ref.txt "$TEST_TMP"/tiny.txt)"
[ -s "$TEST_TMP/ref.txt" ] && [ -s "$TEST_TMP/tiny.txt" ] || fail "two models: empty output"
expect_eq "$(curl -s "$VKLLM_URL/api/ps" | jq '.models | length')" 2 "both models loaded"
pass "two models served at once"
vkllm_stop "$VKLLM_PID"

# --- the same under a KV cache of 8 blocks: preemption, same outputs ---
vkllm_start small VKLLM_KV_BUDGET=4096
create_from tiny "$tiny"
run_parallel "$TEST_TMP/small" tiny 24
for i in $(seq 1 $N); do
  cmp -s "$TEST_TMP/alone/$i" "$TEST_TMP/small/$i" ||
    fail "stream $i differs under preemption: '$(cat "$TEST_TMP/small/$i")' vs '$(cat "$TEST_TMP/alone/$i")'"
done
pre=$(metric vkllm_preemptions_total 'model="tiny:latest"')
[ "$pre" -ge 1 ] || fail "the small KV budget caused no preemption"
expect_eq "$(metric vkllm_kv_blocks 'state="used"')" 0 "blocks in use after all finished"
pass "$N streams under an 8-block KV cache: $pre preemptions, outputs unchanged"
vkllm_stop "$VKLLM_PID"

# --- a full queue answers 503 ---
vkllm_start queue OLLAMA_NUM_PARALLEL=1 OLLAMA_MAX_QUEUE=1
create_from tiny "$tiny"
pids=()
for i in 1 2 3 4 5 6; do
  curl -s -o "$TEST_TMP/q$i.json" -w '%{http_code}' "$VKLLM_URL/api/generate" \
    -d '{"model":"tiny","prompt":"Tell me everything","stream":false,"options":{"num_predict":40}}' \
    >"$TEST_TMP/q$i.code" &
  pids+=($!)
done
wait "${pids[@]}"
busy=0
for i in 1 2 3 4 5 6; do
  if [ "$(cat "$TEST_TMP/q$i.code")" = 503 ]; then
    busy=$((busy + 1))
    expect_eq "$(jq -r .error "$TEST_TMP/q$i.json")" \
      "server busy, please try again.  maximum pending requests exceeded" "503 text"
  else
    expect_eq "$(cat "$TEST_TMP/q$i.code")" 200 "request $i"
  fi
done
[ "$busy" -ge 1 ] && [ "$busy" -le 5 ] || fail "$busy of 6 requests were refused"
pass "OLLAMA_MAX_QUEUE=1: $busy of 6 refused with 503, the rest served"
vkllm_stop "$VKLLM_PID"

# --- a lost device fails only the requests on that model; the model reloads on the next one ---
vkllm_start lost VKLLM_FAULT_INJECT=device_lost@40
create_from tiny "$tiny"
create_from ref "$ref"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"ref","prompt":"x","stream":false,"options":{"num_predict":2}}')" 200 "other model first"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":100}}')" 500 "request on the lost device"
grep -q 'VK_ERROR_DEVICE_LOST' "$TEST_TMP/body" || fail "error does not say what happened: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"tiny","prompt":"x","stream":false,"options":{"num_predict":4}}')" 200 "next request after the loss"
jq -e '.eval_count == 4' "$TEST_TMP/body" >/dev/null || fail "after reload: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/generate" -d '{"model":"ref","prompt":"x","stream":false,"options":{"num_predict":2}}')" 200 "the other model keeps serving"
[ "$(metric vkllm_model_loads_total 'model="tiny:latest"')" -ge 2 ] || fail "tiny was not reloaded"
pass "a lost device fails its requests with a clear error; the model reloads; the server keeps serving"
