#!/usr/bin/env bash
# Starts Debian's docker-registry (the CNCF distribution server) on 127.0.0.1 with a free port and
# filesystem storage under DIR, waits until GET /v2/ answers, and prints "<port> <pid>".
#
#   tests/support/start-registry.sh DIR [OWNER_PID]
#
# DIR gets config.yml, storage/, registry.log, port and pid. With OWNER_PID the registry is also
# stopped when that process exits (so a crashed test leaves no server behind).
# Stop it with tests/support/stop-registry.sh DIR (or kill "$(cat DIR/pid)").
set -euo pipefail
dir=${1:?usage: start-registry.sh DIR [OWNER_PID]}
owner=${2:-}
bin=${VKLLM_DOCKER_REGISTRY:-docker-registry}
command -v "$bin" >/dev/null || { echo "start-registry: $bin not found (run scripts/setup)" >&2; exit 2; }
mkdir -p "$dir/storage"
dir=$(cd "$dir" && pwd)

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# A port found free can be taken before the registry binds it: try a few times.
for attempt in 1 2 3 4 5; do
  port=$(free_port)
  cat >"$dir/config.yml" <<YAML
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:$port
YAML
  "$bin" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 </dev/null &
  pid=$!
  for _ in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then break; fi
    if curl -fs -o /dev/null "http://127.0.0.1:$port/v2/"; then
      echo "$port" >"$dir/port"
      echo "$pid" >"$dir/pid"
      if [ -n "$owner" ]; then
        # Watchdog: stop the registry once the owner is gone, and exit when the registry is.
        (while kill -0 "$owner" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
         kill "$pid" 2>/dev/null || true) >/dev/null 2>&1 </dev/null &
      fi
      echo "$port $pid"
      exit 0
    fi
    sleep 0.05
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
echo "start-registry: docker-registry did not answer on /v2/; log:" >&2
cat "$dir/registry.log" >&2
exit 1
