# Helpers for the scale-out test and benchmark (source after lib.sh): a docker-registry holding
# a fixture model, vkllm replicas on fixed loopback ports that preload it, and nginx running
# deploy/nginx/vkllm.conf with its replica lines pointed at them. Loopback only.

scaleout_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# scaleout_registry: starts Debian's docker-registry; sets REG (127.0.0.1:PORT).
scaleout_registry() {
  command -v docker-registry >/dev/null || fail "docker-registry missing (scripts/setup installs it)"
  local port
  read -r port _ < <(bash "$VKLLM_SOURCE_DIR/tests/support/start-registry.sh" "$TEST_TMP/registry" $$)
  [ -n "$port" ] || fail "docker-registry did not start"
  REG=127.0.0.1:$port
}

# scaleout_push NAME GGUF: creates NAME from GGUF (with a plain chat template) on a throw-away
# server and pushes it to the registry with `vkllm push`.
scaleout_push() {
  local name=$1 gguf=$2 saved_host=${OLLAMA_HOST:-} saved_url=${VKLLM_URL:-}
  vkllm_start pusher
  printf 'FROM %s\nTEMPLATE """{{ range .Messages }}<|{{ .Role }}|>{{ .Content }}\n{{ end }}<|assistant|>"""\n' \
    "$gguf" >"$TEST_TMP/Modelfile"
  "$VKLLM_BIN" create fixture -f "$TEST_TMP/Modelfile" >/dev/null 2>&1 || fail "create the fixture model"
  "$VKLLM_BIN" cp fixture "$name" >/dev/null || fail "cp fixture $name"
  "$VKLLM_BIN" push "$name" >"$TEST_TMP/push.out" 2>&1 || fail "vkllm push $name: $(cat "$TEST_TMP/push.out")"
  PUSHER_PID=$VKLLM_PID PUSHER_URL=$VKLLM_URL
  OLLAMA_HOST=$saved_host VKLLM_URL=$saved_url
}

# scaleout_replica I [ENV=VALUE...]: (re)starts replica I on 127.0.0.1:${REPLICA_PORTS[I]} with
# its own store; sets REPLICA_PIDS[I] and REPLICA_URLS[I].
declare -a REPLICA_PORTS REPLICA_PIDS REPLICA_URLS
scaleout_replica() {
  local i=$1
  shift
  [ -n "${REPLICA_PORTS[$i]:-}" ] || REPLICA_PORTS[$i]=$(scaleout_free_port)
  vkllm_start "replica$i" OLLAMA_HOST="127.0.0.1:${REPLICA_PORTS[$i]}" "$@"
  REPLICA_PIDS[$i]=$VKLLM_PID
  REPLICA_URLS[$i]=$VKLLM_URL
}

# scaleout_wait_ready URL SECONDS: until GET /readyz answers 200 (no key: probes carry none).
scaleout_wait_ready() {
  local url=$1 seconds=$2 i
  for i in $(seq 1 $((seconds * 10))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "$url/readyz not 200 after $seconds s: $(curl -s "$url/readyz")"
}

# scaleout_nginx_render MODE LISTEN_PORT DIR: deploy/nginx/vkllm.conf with its replica lines
# pointed at REPLICA_PORTS and its listener at 127.0.0.1:LISTEN_PORT (MODE round-robin: the
# conversations' location uses the round-robin upstream too), as DIR/site.conf, inside a main
# configuration DIR/nginx.conf that keeps every file in DIR. Responses carry the replica nginx
# chose in X-Vkllm-Upstream.
scaleout_nginx_render() {
  local mode=$1 port=$2 dir=$3 user=""
  mkdir -p "$dir"
  python3 - "$VKLLM_SOURCE_DIR/deploy/nginx/vkllm.conf" "$dir/site.conf" "$mode" "$port" \
    "${REPLICA_PORTS[@]}" <<'PY' || fail "render deploy/nginx/vkllm.conf"
import re, sys
src, out, mode, listen, ports = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
text = open(src).read()
def replica(m):
    return f"server 127.0.0.1:{ports[int(m.group(1))]}"
text, n = re.subn(r"server vkllm-(\d)\.vkllm:11434", replica, text)
assert n == 2 * len(ports), f"{n} replica lines, want {2 * len(ports)}"
text, n = re.subn(r"listen 11434;", f"listen 127.0.0.1:{listen};", text)
assert n == 1, "listen line"
if mode == "round-robin":
    text, n = re.subn(r"proxy_pass http://vkllm_affinity;", "proxy_pass http://vkllm_round_robin;", text)
    assert n == 1, "affinity location"
open(out, "w").write(text)
PY
  [ "$(id -u)" = 0 ] && user="user root;"
  cat >"$dir/nginx.conf" <<CONF
daemon off;
$user
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/client_body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  add_header X-Vkllm-Upstream \$upstream_addr always;
  include $dir/site.conf;
}
CONF
  nginx -t -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" || fail "nginx -t: $(cat "$dir/error.log")"
}

# scaleout_nginx MODE: renders the configuration and runs nginx (in the foreground of a
# background job); sets NGINX_URL and NGINX_PID.
scaleout_nginx() {
  local dir=$TEST_TMP/nginx port i
  command -v nginx >/dev/null || fail "nginx missing (scripts/setup installs it)"
  port=$(scaleout_free_port)
  scaleout_nginx_render "$1" "$port" "$dir"
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$TEST_TMP/nginx.log" 2>&1 &
  NGINX_PID=$!
  VKLLM_PIDS+=("$NGINX_PID")
  NGINX_URL=http://127.0.0.1:$port
  for i in $(seq 1 100); do
    curl -s -o /dev/null "$NGINX_URL/livez" && return 0
    kill -0 "$NGINX_PID" 2>/dev/null || fail "nginx exited: $(cat "$dir/error.log")"
    sleep 0.05
  done
  fail "nginx did not answer on $NGINX_URL"
}

scaleout_nginx_stop() {
  [ -n "${NGINX_PID:-}" ] || return 0
  kill -QUIT "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  NGINX_PID=
}

# scaleout_metric URL NAME [KEY]: the sum of a counter's series on one replica.
scaleout_metric() {
  local auth=()
  [ -n "${3:-}" ] && auth=(-H "Authorization: Bearer $3")
  curl -s "${auth[@]}" "$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 {s += $2} END {print s + 0}'
}
