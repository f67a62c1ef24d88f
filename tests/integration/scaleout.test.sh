#!/usr/bin/env bash
# Scale-out on loopback: Debian's docker-registry holds a model, three `vkllm serve` replicas
# (each its own store, an API key set) pull and load it at start through VKLLM_PRELOAD and
# become ready by themselves, and nginx runs deploy/nginx/vkllm.conf in front of them. 64
# streaming chat clients go through nginx for SCALEOUT_SECONDS (default 15 s, the issue's 30 s
# scaled down for CI) while one replica gets SIGTERM (its readiness turns false at once, it
# drains and exits cleanly) and is started again. No request may fail except ones the stopped
# replica had not finished within its grace; every replica is ready again and its /metrics
# scraped; the numbers are printed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scaleout_lib.sh"

seconds=${SCALEOUT_SECONDS:-15}
clients=${SCALEOUT_CLIENTS:-64}
key=scaleout-test-key
gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
scaleout_registry
trap 'bash "$VKLLM_SOURCE_DIR/tests/support/stop-registry.sh" "$TEST_TMP/registry" >/dev/null 2>&1 || true; _vkllm_cleanup' EXIT
name=$REG/scaleout/tiny:v1
reg_port=${REG##*:}

# A second spelling of the registry that is not loopback by name (the machine's hostname, when
# it resolves to 127.x): only VKLLM_INSECURE_REGISTRIES lets a server use plain HTTP there.
alias_host=""
if getent ahostsv4 "$(hostname)" 2>/dev/null | awk '{print $1}' | grep -q '^127\.'; then
  alias_host=$(hostname):$reg_port
fi
insecure=$REG${alias_host:+,$alias_host}
replica_env=(VKLLM_API_KEY="$key" VKLLM_PRELOAD="$name" VKLLM_INSECURE_REGISTRIES="$insecure"
  VKLLM_THREADS=1)

# --- configuration errors stop the server at once, naming the setting ---
for bad in "VKLLM_PRELOAD=not a name!" "VKLLM_INSECURE_REGISTRIES=http://$REG" "VKLLM_SHUTDOWN_GRACE=soon"; do
  if env OLLAMA_MODELS="$TEST_TMP/bad" OLLAMA_HOST=127.0.0.1:0 "$bad" timeout 20 "$VKLLM_BIN" serve \
    >"$TEST_TMP/bad.out" 2>&1; then
    fail "serve started with $bad"
  fi
  grep -q "${bad%%=*}" "$TEST_TMP/bad.out" || fail "$bad: error does not name the setting: $(cat "$TEST_TMP/bad.out")"
done
pass "a malformed VKLLM_PRELOAD, VKLLM_INSECURE_REGISTRIES or VKLLM_SHUTDOWN_GRACE stops serve with a clear error"

# --- a replica started before its model is in the registry: live, not ready, and says why ---
scaleout_replica 0 "${replica_env[@]}"
expect_eq "$(http_status GET "${REPLICA_URLS[0]}/livez")" 200 "/livez without a key"
expect_eq "$(http_status HEAD "${REPLICA_URLS[0]}/livez")" 200 "HEAD /livez"
expect_eq "$(http_status GET "${REPLICA_URLS[0]}/readyz")" 503 "/readyz before the model exists"
jq -e '.ready == false and (.reasons[0] | startswith("preloading: 0 of 1 models loaded"))
       and .models.preload == 1 and .queue.limit == 512' "$TEST_TMP/body" >/dev/null ||
  fail "/readyz body while preloading: $(body)"
expect_eq "$(http_status GET "${REPLICA_URLS[0]}/api/tags")" 401 "other routes still need the key"
expect_eq "$(http_status GET "${REPLICA_URLS[0]}/")" 200 "/ unchanged"
expect_eq "$(http_status GET "${REPLICA_URLS[0]}/api/version" -H "Authorization: Bearer $key")" 200 "/api/version unchanged"
pass "before its model exists: /livez 200, /readyz 503 with the reason, no key needed for either"

# --- push once; every replica pulls it at start and becomes ready by itself ---
scaleout_push "$name" "$gguf"
scaleout_replica 1 "${replica_env[@]}"
scaleout_replica 2 "${replica_env[@]}"
for i in 0 1 2; do scaleout_wait_ready "${REPLICA_URLS[$i]}" 90; done
want_digest=$(curl -s -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
  "http://$REG/v2/scaleout/tiny/manifests/v1" | sha256sum | cut -d' ' -f1)
for i in 0 1 2; do
  url=${REPLICA_URLS[$i]}
  got=$(curl -s -H "Authorization: Bearer $key" "$url/api/tags" | jq -r ".models[] | select(.name==\"$name\") | .digest")
  expect_eq "$got" "$want_digest" "replica $i: pulled manifest digest"
  ps=$(curl -s -H "Authorization: Bearer $key" "$url/api/ps" | jq -r '.models | length')
  expect_eq "$ps" 1 "replica $i: the preloaded model is loaded"
  grep -q "preload: pulling $name" "$TEST_TMP/replica$i.log" || fail "replica $i did not pull: $(tail -5 "$TEST_TMP/replica$i.log")"
  jq -e '.ready == true and .reasons == [] and .models.loaded == 1' <(curl -s "$url/readyz") >/dev/null ||
    fail "replica $i /readyz body: $(curl -s "$url/readyz")"
done
grep -q "preload: .*retrying" "$TEST_TMP/replica0.log" || fail "replica 0 logged no retry"
pass "VKLLM_PRELOAD: 3 fresh stores pulled the pushed model (same digest), loaded it and became ready"

# --- VKLLM_INSECURE_REGISTRIES: plain HTTP to a registry not loopback by name ---
if [ -n "$alias_host" ]; then
  alias_name=$alias_host/scaleout/tiny:v1
  st=$(http_status POST "$PUSHER_URL/api/pull" -d "{\"model\":\"$alias_name\",\"stream\":false}")
  [ "$st" != 200 ] || fail "a server without the setting pulled over plain HTTP from $alias_host"
  expect_eq "$(http_status POST "${REPLICA_URLS[2]}/api/pull" -H "Authorization: Bearer $key" \
    -d "{\"model\":\"$alias_name\",\"stream\":false}")" 200 "pull from $alias_host with VKLLM_INSECURE_REGISTRIES: $(body)"
  pass "VKLLM_INSECURE_REGISTRIES: $alias_host reached over plain HTTP only where listed"
else
  echo "skip: $(hostname) does not resolve to 127.x; VKLLM_INSECURE_REGISTRIES by name is left to the unit test"
fi
vkllm_stop "$PUSHER_PID"

# --- 64 streaming clients through nginx; replica 1 gets SIGTERM and is started again ---
scaleout_nginx affinity
python3 "$VKLLM_SOURCE_DIR/tests/integration/scaleout_clients.py" load "$NGINX_URL" "$name" \
  --key "$key" --clients "$clients" --seconds "$seconds" --out "$TEST_TMP/load.json" \
  >"$TEST_TMP/load.out" 2>&1 &
load_pid=$!
sleep $((seconds / 5))
stopped_pid=${REPLICA_PIDS[1]}
# While replica 1 drains (a blob upload held half-sent keeps it from finishing early, and a
# chat streams), a request on a connection opened before the signal sees readiness already
# false (new connections are refused from the signal on, so nginx sends nothing new there);
# the upload and the stream then finish.
python3 - "${REPLICA_PORTS[1]}" "$stopped_pid" "$key" "$name" >"$TEST_TMP/drain.json" <<'PY' || fail "drain probe: $(cat "$TEST_TMP/drain.json")"
import hashlib, http.client, json, os, signal, sys, time
port, pid, key, model = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
auth = {"Authorization": "Bearer " + key}
blob = os.urandom(256 * 1024)
upload = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
upload.putrequest("POST", "/api/blobs/sha256:" + hashlib.sha256(blob).hexdigest())
upload.putheader("Authorization", auth["Authorization"])
upload.putheader("Content-Length", str(len(blob)))
upload.endheaders()
upload.send(blob[:1000])
stream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
stream.request("POST", "/api/chat", json.dumps({"model": model, "stream": True,
    "messages": [{"role": "user", "content": "a long story"}],
    "options": {"temperature": 0, "num_predict": 1000}}), auth)
resp = stream.getresponse()
assert resp.status == 200, resp.status
resp.readline()  # generating
probe = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
probe.request("GET", "/livez"); r = probe.getresponse(); r.read()
assert r.status == 200, r.status
time.sleep(0.2)
os.kill(pid, signal.SIGTERM)
t_stop = time.time()
time.sleep(0.3)
probe.request("GET", "/readyz"); r = probe.getresponse()
out = {"t_stop": t_stop, "status": r.status, "body": json.loads(r.read())}
upload.send(blob[1000:])
u = upload.getresponse(); u.read()
out["upload_status"] = u.status
last = {}
for line in resp:
    if line.strip():
        last = json.loads(line)
out["stream_end"] = {k: last.get(k) for k in ("done", "done_reason", "eval_count", "error")}
print(json.dumps(out))
PY
jq -e '.status == 503 and .body.ready == false and (.body.reasons | index("draining: the server is shutting down"))' \
  "$TEST_TMP/drain.json" >/dev/null || fail "readiness after SIGTERM: $(cat "$TEST_TMP/drain.json")"
jq -e '.stream_end.done == true and .upload_status == 201' "$TEST_TMP/drain.json" >/dev/null ||
  fail "requests running at SIGTERM did not finish: $(cat "$TEST_TMP/drain.json")"
rc=0
for _ in $(seq 1 200); do kill -0 "$stopped_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$stopped_pid" 2>/dev/null && fail "replica 1 still running 20 s after SIGTERM"
wait "$stopped_pid" || rc=$?
expect_eq "$rc" 0 "replica 1 exit status after SIGTERM"
grep -q "server stopped" "$TEST_TMP/replica1.log" || fail "replica 1 did not stop cleanly"
cp "$TEST_TMP/replica1.log" "$TEST_TMP/replica1-before-restart.txt"
pass "SIGTERM: /readyz 503 (draining) at once; the running upload and stream finished; exited 0"
scaleout_replica 1 "${replica_env[@]}"
scaleout_wait_ready "${REPLICA_URLS[1]}" 60
grep -q "preload: pulling" "$TEST_TMP/replica1.log" && fail "the restarted replica pulled again"
t_ready=$(date +%s.%N)
wait "$load_pid" || fail "load clients: $(cat "$TEST_TMP/load.out")"
cat "$TEST_TMP/load.out"

# --- the numbers: requests, errors, replicas, hit rates ---
declare -a served
for i in 0 1 2; do
  url=${REPLICA_URLS[$i]}
  expect_eq "$(http_status GET "$url/metrics")" 401 "replica $i /metrics without the key"
  curl -s -H "Authorization: Bearer $key" "$url/metrics" >"$TEST_TMP/metrics$i.txt"
  grep -q '^vkllm_prompt_tokens_total' "$TEST_TMP/metrics$i.txt" || fail "replica $i /metrics has no prompt tokens"
  prompt=$(scaleout_metric "$url" vkllm_prompt_tokens_total "$key")
  hits=$(scaleout_metric "$url" vkllm_prefix_cache_hit_tokens_total "$key")
  served[$i]=$prompt
  echo "replica $i (127.0.0.1:${REPLICA_PORTS[$i]}): prompt tokens $prompt, prefix-cache hits $hits ($(python3 -c "print(f'{100*$hits/max($prompt,1):.1f}')") %)"
done
if [ "${served[1]}" -eq 0 ]; then
  # A slow machine restarted it late in the run (nginx retries a refused replica after 3 s):
  # a few more seconds of clients must reach it.
  python3 "$VKLLM_SOURCE_DIR/tests/integration/scaleout_clients.py" load "$NGINX_URL" "$name" \
    --key "$key" --clients 16 --seconds 5 --out "$TEST_TMP/load2.json" || fail "second load"
  served[1]=$(scaleout_metric "${REPLICA_URLS[1]}" vkllm_prompt_tokens_total "$key")
fi
[ "${served[1]}" -gt 0 ] || fail "the restarted replica got no requests"
python3 - "$TEST_TMP/load.json" "$TEST_TMP/drain.json" "127.0.0.1:${REPLICA_PORTS[1]}" "$t_ready" <<'PY' || fail "request accounting"
import json, sys
load = json.load(open(sys.argv[1])); drain = json.load(open(sys.argv[2]))
stopped, t_ready = sys.argv[3], float(sys.argv[4])
t0 = load["t0_epoch"]; t_stop = drain["t_stop"] - t0
reqs = load["requests"]
ok = [r for r in reqs if r["ok"]]
bad = [r for r in reqs if not r["ok"]]
# The replica that answered: nginx lists every one it tried, the last answered.
last = lambda r: r["upstream"].split(",")[-1].strip()
lost = [r for r in bad if last(r) == stopped and r["start"] < t_stop]
other = [r for r in bad if r not in lost]
by = {}
for r in ok:
    by[last(r)] = by.get(last(r), 0) + 1
retried = sum("," in r["upstream"] for r in reqs)
print(f"scaleout: {len(reqs)} requests through nginx, {len(ok)} ok, {len(bad)} failed "
      f"({len(lost)} in flight on the stopped replica past its grace, {len(other)} other); "
      f"{retried} retried on another replica by nginx; served by {by}; "
      f"SIGTERM at {t_stop:.1f} s, restarted replica ready at {t_ready - t0:.1f} s")
for r in other[:5]:
    print("  unexpected failure:", r, file=sys.stderr)
assert not other, f"{len(other)} requests failed that must not"
assert len(ok) >= 64, f"only {len(ok)} requests succeeded"
assert len(by) == 3, f"not every replica served requests: {by}"
PY
pass "no request lost across a replica's SIGTERM and restart; all ready again; metrics scraped"
for i in 0 1 2; do scaleout_wait_ready "${REPLICA_URLS[$i]}" 10; done
scaleout_nginx_stop
