#!/usr/bin/env bash
# Prefix-affinity routing vs round-robin, on loopback: three `vkllm serve` replicas preload a
# model from a docker-registry, nginx runs deploy/nginx/vkllm.conf in front of them (affinity:
# as shipped; round-robin: the conversations' location pointed at the round-robin upstream),
# and 32 multi-turn chats (each turn resends the history, one X-Session-Id per chat) go through
# it. Prints, per mode, the prefix-cache hit rate summed over the replicas' /metrics and the
# time to first token (client side, p50 and p90 of every turn and of turns after the first).
# The replicas restart between the modes, so both start with empty caches.
#
#   VKLLM_BIN=build/server/vkllm bench/scaleout_bench.sh [GGUF]
# Environment: CHATS (32), TURNS (6), PARALLEL (6 chats at a time), NUM_PREDICT (8),
# TURN_WORDS (120 words added to each user turn, so prefill weighs), VKLLM_THREADS (1 per
# replica).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export VKLLM_SOURCE_DIR=${VKLLM_SOURCE_DIR:-$(cd "$here/.." && pwd)}
source "$VKLLM_SOURCE_DIR/tests/integration/lib.sh"
source "$VKLLM_SOURCE_DIR/tests/integration/scaleout_lib.sh"

gguf=${1:-$VKLLM_SHARED_DIR/testdata/models/tolstoy-gen-q8_0.gguf}
chats=${CHATS:-32} turns=${TURNS:-6} parallel=${PARALLEL:-6} num_predict=${NUM_PREDICT:-8}
turn_words=${TURN_WORDS:-120}
scaleout_registry
trap 'scaleout_nginx_stop; bash "$VKLLM_SOURCE_DIR/tests/support/stop-registry.sh" "$TEST_TMP/registry" >/dev/null 2>&1 || true; _vkllm_cleanup' EXIT
name=$REG/bench/model:v1
scaleout_push "$name" "$gguf"
vkllm_stop "$PUSHER_PID"
env_=(VKLLM_PRELOAD="$name" VKLLM_THREADS="${VKLLM_THREADS:-1}")

results=()
for mode in affinity round-robin; do
  for i in 0 1 2; do scaleout_replica "$i" "${env_[@]}"; done
  for i in 0 1 2; do scaleout_wait_ready "${REPLICA_URLS[$i]}" 120; done
  scaleout_nginx "$mode"
  python3 "$VKLLM_SOURCE_DIR/tests/integration/scaleout_clients.py" chats "$NGINX_URL" "$name" \
    --chats "$chats" --turns "$turns" --parallel "$parallel" --num-predict "$num_predict" --turn-words "$turn_words" \
    --out "$TEST_TMP/$mode.json" || fail "$mode: chats failed"
  prompt=0 hits=0 per=""
  for i in 0 1 2; do
    p=$(scaleout_metric "${REPLICA_URLS[$i]}" vkllm_prompt_tokens_total)
    h=$(scaleout_metric "${REPLICA_URLS[$i]}" vkllm_prefix_cache_hit_tokens_total)
    prompt=$((prompt + p)) hits=$((hits + h)) per="$per $h/$p"
  done
  results+=("$(python3 - "$TEST_TMP/$mode.json" "$mode" "$prompt" "$hits" "$per" <<'PY'
import json, statistics, sys
turns = json.load(open(sys.argv[1]))
mode, prompt, hits, per = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000
all_ = [t["ttft"] for t in turns]
later = [t["ttft"] for t in turns if t["turn"] > 0]
replicas = {}
for t in turns:
    replicas.setdefault(t["chat"], set()).add(t["upstream"])
spread = statistics.mean(len(v) for v in replicas.values())
print(f"| {mode} | {100 * hits / max(prompt, 1):.1f} % ({hits}/{prompt}) | "
      f"{pct(all_, .5):.0f} / {pct(all_, .9):.0f} | {pct(later, .5):.0f} / {pct(later, .9):.0f} | "
      f"{spread:.2f} | {per.strip()} |")
PY
)")
  scaleout_nginx_stop
  for i in 0 1 2; do vkllm_stop "${REPLICA_PIDS[$i]}"; done
done
echo
echo "$chats chats x $turns turns (+$turn_words words each), $parallel at a time, $num_predict tokens generated a turn, 3 replicas, model $(basename "$gguf")"
echo "| routing | prefix-cache hit rate (hit/prompt tokens) | TTFT p50 / p90 ms, all turns | TTFT p50 / p90 ms, turns 2+ | replicas per chat | hits/prompt per replica |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${results[@]}"
