#!/usr/bin/env bash
# vkllm serve against curl: liveness, version, 404/405, CORS, Host check, OLLAMA_HOST, SIGTERM.
source "$(dirname "$0")/lib.sh"

vkllm_start

# GET and HEAD / answer like Ollama.
expect_eq "$(http_status GET "$VKLLM_URL/")" 200 "GET /"
expect_eq "$(body)" "Ollama is running" "GET / body"
headers=$(curl -sI "$VKLLM_URL/")
echo "$headers" | grep -qi '^content-type: text/plain; charset=utf-8' || fail "HEAD / content type: $headers"
echo "$headers" | grep -q '^HTTP/1.1 200' || fail "HEAD / status: $headers"
pass "GET/HEAD /"

expect_eq "$(http_status GET "$VKLLM_URL/api/version")" 200 "GET /api/version"
version=$(jq -r .version "$TEST_TMP/body")
# The Ollama API version vkllm implements (clients gate on it, e.g. >= 0.6.4); vkllm's own
# version is the CLI's and every response's X-Vkllm-Version header.
expect_eq "$version" 0.33.0 "/api/version: the Ollama API version"
own=$(curl -sI "$VKLLM_URL/api/version" | tr -d '\r' | sed -n 's/^[Xx]-[Vv]kllm-[Vv]ersion: //p')
expect_eq "$("$VKLLM_BIN" --version | grep -o '[0-9][^ ]*$')" "$own" "CLI version = X-Vkllm-Version"
pass "/api/version $version, vkllm $own"

expect_eq "$(http_status GET "$VKLLM_URL/api/nope")" 404 "unknown route"
expect_eq "$(body)" "404 page not found" "unknown route body"
expect_eq "$(http_status DELETE "$VKLLM_URL/api/version")" 405 "wrong method"
pass "404 and 405"

# CORS: preflight from an allowed origin, refusal of others; OLLAMA_ORIGINS extends the list.
pre=$(curl -s -o /dev/null -D - -X OPTIONS -H 'Origin: http://localhost:8080' \
  -H 'Access-Control-Request-Method: POST' "$VKLLM_URL/api/version")
echo "$pre" | grep -q '^HTTP/1.1 204' || fail "preflight status: $pre"
echo "$pre" | grep -qi '^access-control-allow-origin: http://localhost:8080' || fail "preflight origin: $pre"
echo "$pre" | grep -qi '^access-control-allow-headers: .*Content-Type' || fail "preflight headers: $pre"
expect_eq "$(http_status GET "$VKLLM_URL/api/version" -H 'Origin: https://evil.example')" 403 "foreign origin"
expect_eq "$(body)" "" "403 body"
expect_eq "$(http_status GET "$VKLLM_URL/api/version" -H 'Host: evil.example')" 403 "rebinding Host"
expect_eq "$(http_status GET "$VKLLM_URL/api/version" -H 'Host: myapp.localhost:1')" 200 ".localhost Host"
pass "CORS and Host checks"

# OLLAMA_ORIGINS adds an origin; a malformed entry stops the server from starting.
vkllm_start cors OLLAMA_ORIGINS="https://ui.example.com"
expect_eq "$(http_status GET "$VKLLM_URL/api/version" -H 'Origin: https://ui.example.com')" 200 "OLLAMA_ORIGINS origin"
grep -qi 'access-control-allow-origin' <(curl -s -D - -o /dev/null -H 'Origin: https://ui.example.com' "$VKLLM_URL/") \
  || fail "no Access-Control-Allow-Origin for an OLLAMA_ORIGINS origin"
if OLLAMA_HOST=127.0.0.1:0 OLLAMA_ORIGINS="not-an-origin" OLLAMA_MODELS="$TEST_TMP/badorigins" HOME="$TEST_TMP" timeout 5 "$VKLLM_BIN" serve >"$TEST_TMP/badorigins.out" 2>&1; then
  fail "serve started with a malformed OLLAMA_ORIGINS"
fi
grep -q 'not-an-origin' "$TEST_TMP/badorigins.out" || fail "bad OLLAMA_ORIGINS error does not name the entry"
pass "OLLAMA_ORIGINS"

# OLLAMA_HOST is respected: a fixed port given as scheme://host:port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Its own store and HOME: a test never touches the user's ~/.vkllm.
mkdir -p "$TEST_TMP/fixed/models"
OLLAMA_HOST="http://127.0.0.1:$port" OLLAMA_MODELS="$TEST_TMP/fixed/models" HOME="$TEST_TMP/fixed" \
  "$VKLLM_BIN" serve >"$TEST_TMP/fixed.log" 2>&1 &
fixed_pid=$!
VKLLM_PIDS+=("$fixed_pid")
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
expect_eq "$(curl -s "http://127.0.0.1:$port/")" "Ollama is running" "server on OLLAMA_HOST port"
grep -q "Listening on 127.0.0.1:$port" "$TEST_TMP/fixed.log" || fail "log does not show the OLLAMA_HOST address"
pass "OLLAMA_HOST=http://127.0.0.1:$port"

# Keep-alive: curl reuses one connection for two URLs.
reuse=$(curl -sv "$VKLLM_URL/" "$VKLLM_URL/api/version" 2>&1 | grep -c 'Re-using existing connection' || true)
[ "$reuse" -ge 1 ] || fail "connection was not kept alive"
pass "keep-alive"

# The UI is mounted under /ui/.
expect_eq "$(http_status GET "$VKLLM_URL/ui/")" 200 "GET /ui/"
grep -qi '<html' "$TEST_TMP/body" || fail "/ui/ is not HTML"
pass "/ui/"

# SIGTERM stops the server gracefully.
vkllm_stop "$fixed_pid"
grep -q 'server stopped' "$TEST_TMP/fixed.log" || fail "no graceful stop message"
pass "graceful SIGTERM"
