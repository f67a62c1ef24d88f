#!/usr/bin/env bash
# deploy/ checked offline: every Kubernetes manifest parses and agrees with the server
# (scaleout_manifests.py), the paths its probes, scrape annotations and Ingress use are routes
# of a live `vkllm serve`, the checker itself catches a broken manifest, and nginx -t and
# haproxy -c accept deploy/nginx/vkllm.conf and deploy/haproxy/vkllm.cfg.
# `kubectl --dry-run=client` is not run: kubectl (Debian's kubernetes-client 1.20, and 1.32
# too) needs a cluster's API discovery even for a client-side dry run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scaleout_lib.sh"

python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml missing (scripts/setup installs it)"
check=$VKLLM_SOURCE_DIR/tests/integration/scaleout_manifests.py
python3 "$check" "$VKLLM_SOURCE_DIR" "$TEST_TMP/probes" || fail "deploy/kubernetes disagrees with the server"
pass "manifests parse; port, probes, settings, registry, selectors and HPA metric agree"

# The checker fails on what pods would trip over (a copy of the tree with one field broken).
mutate() {  # mutate FILE SED-EXPRESSION WHAT
  local copy=$TEST_TMP/mutant
  rm -rf "$copy"
  mkdir -p "$copy"
  cp -r "$VKLLM_SOURCE_DIR/deploy" "$VKLLM_SOURCE_DIR/server" "$VKLLM_SOURCE_DIR/registry" "$copy/"
  ln -s "$VKLLM_SOURCE_DIR/engine" "$copy/engine"
  sed -i "$2" "$copy/$1"
  cmp -s "$copy/$1" "$VKLLM_SOURCE_DIR/$1" && fail "mutation '$3' changed nothing"
  if python3 "$check" "$copy" "$TEST_TMP/mutant.probes" >/dev/null 2>"$TEST_TMP/mutant.err"; then
    fail "the manifest check accepted $3"
  fi
}
mutate deploy/kubernetes/vkllm.yaml 's|path: /readyz|path: /ready|' "a readiness probe on /ready"
mutate deploy/kubernetes/vkllm.yaml 's|value: "0.0.0.0:11434"|value: "0.0.0.0:8080"|' "a port the probes do not use"
mutate deploy/kubernetes/vkllm.yaml 's|name: VKLLM_PRELOAD|name: VKLLM_PRELOADS|' "a misspelt setting"
mutate deploy/kubernetes/hpa.yaml 's|name: vkllm_queued_requests|name: vkllm_queue_depth|' "an HPA metric vkllm does not export"
mutate deploy/kubernetes/push-model-job.yaml 's|value: vkllm-registry:5000/models/llama3.2:3b|value: vkllm-registry:5000/models/other:1|' \
  "a Job pushing another model than the replicas preload"
mutate deploy/nginx/vkllm.conf 's/|v1\/responses)/)/' "nginx giving affinity to fewer routes than the Ingress"
pass "the manifest check rejects 6 kinds of broken manifest"

# The paths are routes of the real server (probes and metrics 200; the rest answer as routes
# do, not with the router's "404 page not found" or 405).
vkllm_start manifests
while read -r path; do
  case $path in
    /livez | /readyz | /metrics) expect_eq "$(http_status GET "$VKLLM_URL$path")" 200 "GET $path" ;;
    *)
      st=$(http_status POST "$VKLLM_URL$path" -d '{"model":"no-such-model"}')
      [ "$st" != 405 ] && [ "$(body)" != "404 page not found" ] || fail "POST $path: $st $(body) (not a route)"
      ;;
  esac
done <"$TEST_TMP/probes"
pass "probe, scrape and Ingress paths are routes of vkllm serve: $(tr '\n' ' ' <"$TEST_TMP/probes")"

# The balancer configurations as the balancers read them (replica names pointed at loopback).
command -v nginx >/dev/null || fail "nginx missing (scripts/setup installs it)"
command -v haproxy >/dev/null || fail "haproxy missing (scripts/setup installs it)"
REPLICA_PORTS=(20001 20002 20003)
scaleout_nginx_render affinity 20000 "$TEST_TMP/nginx"
sed 's/vkllm-\([0-9]\)\.vkllm:11434/127.0.0.1:2000\1/; s/bind :11434/bind 127.0.0.1:20000/' \
  "$VKLLM_SOURCE_DIR/deploy/haproxy/vkllm.cfg" >"$TEST_TMP/haproxy.cfg"
haproxy -c -q -f "$TEST_TMP/haproxy.cfg" >"$TEST_TMP/haproxy.out" 2>&1 || fail "haproxy -c: $(cat "$TEST_TMP/haproxy.out")"
pass "nginx -t accepts deploy/nginx/vkllm.conf, haproxy -c accepts deploy/haproxy/vkllm.cfg"
echo "skip: kubectl --dry-run=client (kubectl needs a cluster's API discovery even for client dry runs)"
