#!/usr/bin/env bash
# Issue 14's reproducers against the real server: each request that used to crash it, smuggle a
# request, leak a path or store garbage must now be answered (400/404/413/431) and leave the
# server serving.
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
[ -f "$gguf" ] || fail "fixture $gguf missing"
gguf_digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)

vkllm_start
alive() { expect_eq "$(http_status GET "$VKLLM_URL/api/version")" 200 "server alive after $1"; }

expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$gguf_digest" --data-binary "@$gguf")" 201 "upload GGUF"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"tiny\",\"files\":{\"t.gguf\":\"$gguf_digest\"},\"stream\":false}")" 200 "create tiny"

# --- 1. 60,000 nested '[' inside options / parameters: 400, not SIGSEGV ---
python3 -c 'import sys; d=60000; sys.stdout.write("{\"model\":\"tiny\",\"options\":{\"x\":" + "["*d + "]"*d + "}}")' >"$TEST_TMP/deep-show.json"
python3 -c 'import sys; d=60000; sys.stdout.write("{\"model\":\"deep\",\"from\":\"tiny\",\"parameters\":{\"x\":" + "["*d + "]"*d + "},\"stream\":false}")' >"$TEST_TMP/deep-create.json"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" --data-binary "@$TEST_TMP/deep-show.json")" 400 "deep /api/show"
grep -q "nested too deeply" "$TEST_TMP/body" || fail "deep show error: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" --data-binary "@$TEST_TMP/deep-create.json")" 400 "deep /api/create"
alive "deep JSON"
pass "deeply nested JSON is a 400"

# --- 2/3. raw HTTP: huge header, huge trailer, smuggling through Transfer-Encoding, Host ---
python3 - "$VKLLM_PORT" <<'PY' || fail "raw HTTP checks"
import socket, sys
port = int(sys.argv[1])
def exchange(data, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
    except OSError:
        pass
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        return out, False
    return out, True  # True: the server closed the connection
def status(out):
    return int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else 0
checks = 0
for name in (b"X-Big: " + b"v" * 70000, b"n" * 70000 + b": v"):
    out, closed = exchange(b"GET /api/version HTTP/1.1\r\nHost: localhost\r\n" + name + b"\r\n\r\n")
    assert status(out) in (431, 0) and closed, (status(out), closed)
    checks += 1
out, closed = exchange(b"POST /api/show HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"2\r\n{}\r\n0\r\nX-T: " + b"t" * 70000 + b"\r\n\r\n")
assert status(out) in (400, 431, 0) and closed, (out[:100], closed)
hidden = b"GET /api/version HTTP/1.1\r\nHost: localhost\r\n\r\n"
for te in (b"xchunked", b"gzip", b"chunked, identity", b""):
    out, closed = exchange(b"POST /api/show HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: " + te +
                           b"\r\n\r\n" + hidden)
    assert status(out) == 400 and closed, (te, out[:200])
    assert out.count(b"HTTP/1.1 ") == 1, ("hidden request answered", te, out)
    checks += 1
for head in (b"GET /api/version HTTP/1.1\r\n\r\n",
             b"GET /api/version HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n"):
    out, closed = exchange(head)
    assert status(out) == 400 and closed, (head, out[:200])
    checks += 1
print("raw checks", checks)
PY
alive "raw HTTP abuse"
pass "oversized headers/trailers, unknown Transfer-Encoding and bad Host are refused and closed"

# --- 5. JSON bodies are capped (64 MiB): a 100 MB body is a 413 before it is read ---
code=$(head -c 100000000 /dev/zero | tr '\0' ' ' | curl -s -o "$TEST_TMP/body" -w '%{http_code}' \
  -X POST "$VKLLM_URL/api/show" -H 'Content-Type: application/json' --data-binary @-)
expect_eq "$code" 413 "100 MB JSON body"
alive "a 100 MB body"
pass "JSON body cap"

# --- 8. parameters: ranges and names as Ollama words them ---
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"p","from":"tiny","parameters":{"num_ctx":1e308},"stream":false}')" 400 "num_ctx 1e308"
grep -q 'invalid int value \[1e+308\]' "$TEST_TMP/body" || fail "num_ctx 1e308: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"p","from":"tiny","parameters":{"num_ctx":-1},"stream":false}')" 400 "num_ctx -1"
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d '{"model":"p","from":"tiny","parameters":{"":1},"stream":false}')" 400 "empty parameter name"
grep -q "unknown parameter ''" "$TEST_TMP/body" || fail "empty name: $(body)"
pass "parameter names and ranges are validated"

# --- 9. escaped NUL, server paths, :local / :cloud ---
expect_eq "$(http_status DELETE "$VKLLM_URL/api/delete" -d '{"model":"a\u0000b:c:d"}')" 400 "NUL name"
jq -e '.error | test("is invalid$")' "$TEST_TMP/body" >/dev/null || fail "NUL name message cut short: $(body)"
head -c 4096 /dev/urandom >"$TEST_TMP/junk.gguf"
junk_digest=sha256:$(sha256sum "$TEST_TMP/junk.gguf" | cut -d' ' -f1)
expect_eq "$(http_status POST "$VKLLM_URL/api/blobs/$junk_digest" --data-binary "@$TEST_TMP/junk.gguf")" 201 "upload junk"
code=$(http_status POST "$VKLLM_URL/api/create" -d "{\"model\":\"junk\",\"files\":{\"j.gguf\":\"$junk_digest\"},\"stream\":false}")
[ "$code" = 400 ] || fail "junk GGUF create: $code $(body)"
if grep -q "$TEST_TMP" "$TEST_TMP/body"; then fail "error shows a server path: $(body)"; fi
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"tiny:local"}')" 200 "tiny:local"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"tiny:cloud"}')" 404 "tiny:cloud"
expect_eq "$(http_status POST "$VKLLM_URL/api/show" -d '{"model":"tiny:local:cloud"}')" 400 "tiny:local:cloud"
jq -e '.error == "use either :local or :cloud, not both: tiny:local:cloud"' "$TEST_TMP/body" >/dev/null || fail ":local:cloud: $(body)"
pass "names: NUL kept, no server paths, :local/:cloud"

# --- 11. no network: fail fast naming the registry ---
start=$(date +%s%N)
expect_eq "$(http_status POST "$VKLLM_URL/api/pull" -d '{"model":"registry.invalid/ns/m","stream":false}')" 500 "unreachable registry"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "cannot reach the registry registry.invalid" "$TEST_TMP/body" || fail "unreachable: $(body)"
[ "$ms" -lt 3000 ] || fail "unreachable registry took ${ms} ms"
pass "unreachable registry fails in ${ms} ms"

# --- 7. a pull stops when its client leaves (stream:false writes nothing until the end) ---
cat >"$TEST_TMP/slow_registry.py" <<'PY'
import hashlib, http.server, json, sys, time
marker = sys.argv[1]
layer_size = 10 * 1000 * 1000
layer = "sha256:" + hashlib.sha256(b"x" * layer_size).hexdigest()
config = b"{}"
manifest = json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
    "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
               "digest": "sha256:" + hashlib.sha256(config).hexdigest(), "size": len(config)},
    "layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": layer,
                "size": layer_size}]}).encode()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if "/manifests/" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
            self.send_header("Content-Length", str(len(manifest)))
            self.end_headers(); self.wfile.write(manifest); return
        if "/blobs/" in self.path:  # 1 KB every 20 ms: minutes for the whole layer
            self.send_response(200)
            self.send_header("Content-Length", str(layer_size))
            self.end_headers()
            try:
                for _ in range(layer_size // 1000):
                    self.wfile.write(b"x" * 1000); self.wfile.flush(); time.sleep(0.02)
            except OSError:
                open(marker, "w").write("%f" % time.time())
            return
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
python3 "$TEST_TMP/slow_registry.py" "$TEST_TMP/stopped" >"$TEST_TMP/slow_registry.port" &
VKLLM_PIDS+=("$!")
for i in $(seq 1 50); do [ -s "$TEST_TMP/slow_registry.port" ] && break; sleep 0.1; done
reg_port=$(head -1 "$TEST_TMP/slow_registry.port")
curl -s -m 2 -o /dev/null -X POST "$VKLLM_URL/api/pull" \
  -d "{\"model\":\"127.0.0.1:$reg_port/ns/slow:t\",\"insecure\":true,\"stream\":false}" || true
left=$(date +%s%N)
for i in $(seq 1 30); do [ -f "$TEST_TMP/stopped" ] && break; sleep 0.1; done
[ -f "$TEST_TMP/stopped" ] || fail "the pull went on downloading after its client left"
stopped_ms=$(( ($(date +%s%N) - left) / 1000000 ))
pass "pull stopped within ${stopped_ms} ms of its client leaving"

# --- 6. /api/tags answered from the catalog, still right after changes ---
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 200 "tags"
jq -e '[.models[].name] == ["tiny:latest"] and .models[0].details.family == "llama"' "$TEST_TMP/body" >/dev/null || fail "tags: $(body)"
expect_eq "$(http_status POST "$VKLLM_URL/api/copy" -d '{"source":"tiny","destination":"tiny2"}')" 200 "copy"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 200 "tags after copy"
jq -e '[.models[].name] | sort == ["tiny2:latest","tiny:latest"]' "$TEST_TMP/body" >/dev/null || fail "tags after copy: $(body)"
expect_eq "$(http_status DELETE "$VKLLM_URL/api/delete" -d '{"model":"tiny2"}')" 200 "delete"
expect_eq "$(http_status GET "$VKLLM_URL/api/tags")" 200 "tags after delete"
jq -e '[.models[].name] == ["tiny:latest"]' "$TEST_TMP/body" >/dev/null || fail "tags after delete: $(body)"
pass "/api/tags follows copy and delete"

alive "all of the above"
