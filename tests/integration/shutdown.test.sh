#!/usr/bin/env bash
# SIGTERM while generations still run (issue 41): 24 times, a server is stopped with a stream and
# a stream:false request on its model that outlast the grace. It must exit cleanly (status 0,
# never SIGSEGV), the stream must end with a final {"error"} line and the stream:false request
# must get a 503 with an error body; a stream that finishes within the grace is not cut.
source "$(dirname "$0")/lib.sh"

vkllm_start store
create_model tiny '{{ .Prompt }}'
vkllm_stop "$VKLLM_PID"

long='{"model":"tiny","prompt":"Once upon a time","options":{"temperature":0,"num_ctx":2048}}'
short='{"model":"tiny","prompt":"Once","options":{"temperature":0,"num_predict":8}}'
crashes=0 cut_streams=0 unavailable=0
for i in $(seq 1 24); do
  grace=$((i % 2))  # alternate: no grace at all, and one second of it
  vkllm_start store VKLLM_SHUTDOWN_GRACE=$grace
  curl -sN "$VKLLM_URL/api/generate" -d "$long" >"$TEST_TMP/stream.$i" &
  stream_pid=$!
  curl -s -o "$TEST_TMP/single.$i" -w '%{http_code}' "$VKLLM_URL/api/generate" \
    -d "$(jq -c '.stream=false' <<<"$long")" >"$TEST_TMP/single_status.$i" &
  single_pid=$!
  # Wait until both requests are generating, then stop the server under them.
  for _ in $(seq 1 500); do
    [ "$(wc -l <"$TEST_TMP/stream.$i")" -ge 3 ] && [ "$(metric vkllm_running_sequences)" -ge 2 ] && break
    sleep 0.02
  done
  [ "$(wc -l <"$TEST_TMP/stream.$i")" -ge 3 ] || fail "iteration $i: the stream did not start"
  [ "$(metric vkllm_running_sequences)" -ge 2 ] || fail "iteration $i: the stream:false request did not start"
  kill -TERM "$VKLLM_PID"
  rc=0
  wait "$VKLLM_PID" || rc=$?
  wait "$stream_pid" "$single_pid" || true
  if [ "$rc" -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "iteration $i: vkllm exited with status $rc" >&2
    tail -n 20 "$VKLLM_LOG" >&2
    continue
  fi
  last=$(tail -n 1 "$TEST_TMP/stream.$i")
  if jq -e '.error | test("shutting down")' <<<"$last" >/dev/null 2>&1; then
    cut_streams=$((cut_streams + 1))
  else
    jq -e '.done == true' <<<"$last" >/dev/null 2>&1 ||
      fail "iteration $i: the stream ended with neither an error line nor done: $last"
  fi
  status=$(cat "$TEST_TMP/single_status.$i")
  if [ "$status" = 503 ]; then
    jq -e '.error | test("shutting down")' "$TEST_TMP/single.$i" >/dev/null ||
      fail "iteration $i: 503 without the reason: $(cat "$TEST_TMP/single.$i")"
    unavailable=$((unavailable + 1))
  elif [ "$status" = 200 ]; then
    jq -e '.done == true' "$TEST_TMP/single.$i" >/dev/null ||
      fail "iteration $i: a 200 that is not a whole answer: $(cat "$TEST_TMP/single.$i")"
  else
    fail "iteration $i: stream:false got status $status: $(cat "$TEST_TMP/single.$i")"
  fi
done
echo "shutdown: 24 SIGTERMs mid-stream: $crashes crashes, $cut_streams streams ended with an error line, $unavailable stream:false requests answered 503"
expect_eq "$crashes" 0 "clean exits"
[ "$cut_streams" -ge 12 ] || fail "only $cut_streams of 24 streams outlasted the grace: the test no longer exercises the cut"
pass "SIGTERM mid-stream: clean exit, final error line, 503 for stream:false"

# Within the grace, a short request still completes normally.
vkllm_start store VKLLM_SHUTDOWN_GRACE=5
curl -s "$VKLLM_URL/api/generate" -d "$short" >/dev/null  # loads the model
curl -sN "$VKLLM_URL/api/generate" -d "$(jq -c '.options.num_predict=200' <<<"$short")" >"$TEST_TMP/graceful" &
pid=$!
for _ in $(seq 1 200); do
  [ -s "$TEST_TMP/graceful" ] && break
  sleep 0.01
done
kill -TERM "$VKLLM_PID"
rc=0
wait "$VKLLM_PID" || rc=$?
wait "$pid" || true
expect_eq "$rc" 0 "exit status after a graceful stop"
jq -e -s '.[-1].done == true' "$TEST_TMP/graceful" >/dev/null ||
  fail "a stream within the grace was cut: $(tail -n 2 "$TEST_TMP/graceful")"
pass "streams that finish within the grace are not cut"
