#!/usr/bin/env bash
# The engine commands on the shared reference models: `debug logits` reproduces llama.cpp's
# recorded tokens, logits and greedy continuation; `generate` is deterministic (greedy, and
# seeded sampling) and reports speed; `perplexity` prints a finite ppl that F16 and Q8_0 agree
# on; `bench --json` prints the fields it promises; bad inputs exit 1 with a clear message.
set -euo pipefail
: "${VKLLM_BIN:?}" "${VKLLM_SHARED_DIR:?}"
models="$VKLLM_SHARED_DIR/testdata/models"
refs="$VKLLM_SHARED_DIR/testdata/reference"
text="$VKLLM_SHARED_DIR/testdata/text/war-and-peace.txt"
f16="$models/ref-llama-f16.gguf"
q8="$models/ref-llama-q8_0.gguf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# debug logits vs llama.cpp: prompt tokens exact, greedy tokens up to the first near-tie (the
# reference's margin below 0.01), last logits' cosine >= 0.9999.
"$VKLLM_BIN" debug logits --model "$f16" --prompt "$(cat "$refs/fox.txt")" --greedy 8 \
  >"$tmp/logits.json"
python3 - "$tmp/logits.json" "$refs/ref-llama-f16.fox.json" <<'PY'
import json, math, sys
got = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
assert got["tokens"] == ref["prompt_tokens"], (got["tokens"], ref["prompt_tokens"])
a, b = got["logits"], ref["last_logits"]
assert len(a) == len(b) == ref["n_vocab"], (len(a), len(b))
cos = sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
assert cos >= 0.9999, cos
n = 0
for g, r, m in zip(got["greedy_tokens"], ref["greedy_tokens"], ref["greedy_margins"]):
    if m < 0.01:
        break
    assert g == r, (n, got["greedy_tokens"], ref["greedy_tokens"])
    n += 1
assert len(got["greedy_tokens"]) == 8
print(f"debug logits: prompt tokens match, cosine {cos:.6f}, {n} greedy tokens match")
PY

# generate: greedy is deterministic and reports speed on stderr; same seed, same sample.
gen() { "$VKLLM_BIN" generate --model "$f16" --prompt "Once upon a time" --num-predict 8 "$@"; }
gen --temperature 0 >"$tmp/g1" 2>"$tmp/g1.err"
gen --temperature 0 >"$tmp/g2" 2>/dev/null
[ -s "$tmp/g1" ] || fail "generate printed nothing"
cmp -s "$tmp/g1" "$tmp/g2" || fail "greedy generate differs: '$(cat "$tmp/g1")' vs '$(cat "$tmp/g2")'"
grep -Eq 'decode: [0-9]+ tokens, [0-9.]+ tok/s' "$tmp/g1.err" || fail "no tok/s line: $(cat "$tmp/g1.err")"
gen --temperature 0.8 --seed 42 >"$tmp/s1" 2>/dev/null
gen --temperature 0.8 --seed 42 >"$tmp/s2" 2>/dev/null
cmp -s "$tmp/s1" "$tmp/s2" || fail "seeded generate differs: '$(cat "$tmp/s1")' vs '$(cat "$tmp/s2")'"
echo "generate: deterministic"

# perplexity: finite, > 1, and F16 vs Q8_0 within 3%.
ppl() {
  "$VKLLM_BIN" perplexity --model "$1" --file "$text" --ctx 128 --chunks 2 2>/dev/null |
    sed -n 's/^ppl = \([0-9.eE+-]*\)$/\1/p'
}
p16=$(ppl "$f16")
p8=$(ppl "$q8")
python3 - "$p16" "$p8" <<'PY'
import math, sys
a, b = float(sys.argv[1]), float(sys.argv[2])
assert math.isfinite(a) and math.isfinite(b) and a > 1 and b > 1, (a, b)
assert abs(a - b) / a < 0.03, (a, b)
print(f"perplexity: f16 {a:.4f}, q8_0 {b:.4f}")
PY

# bench --json
"$VKLLM_BIN" bench --model "$f16" --batch 1,4 --prompt 32 --gen 4 --json >"$tmp/bench.json" \
  2>/dev/null
python3 - "$tmp/bench.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("model", "device", "arch", "n_layer", "n_embd", "weight_bytes", "load_seconds",
          "prefill", "decode"):
    assert k in j, k
assert j["arch"] == "llama" and j["n_layer"] == 2 and j["n_embd"] == 256, j
assert j["prefill"]["tokens"] == 32 and j["prefill"]["tok_per_s"] > 0, j["prefill"]
assert [d["batch"] for d in j["decode"]] == [1, 4], j["decode"]
for d in j["decode"]:
    assert d["tokens"] == 4 * d["batch"] and d["tok_per_s"] > 0 and d["ms_per_step"] > 0, d
print("bench: JSON has its fields")
PY

# bench --depth: context longer than one step's 512 tokens is built in chunks before timing.
"$VKLLM_BIN" bench --model "$f16" --batch 1,2 --prompt 16 --gen 2 --depth 600 --json \
  >"$tmp/bench-depth.json" 2>/dev/null
python3 - "$tmp/bench-depth.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["depth"] == 600 and j["prefill"]["tok_per_s"] > 0, j
assert [d["batch"] for d in j["decode"]] == [1, 2], j["decode"]
print("bench --depth: decodes after 600 tokens of context")
PY

# Bad inputs: exit 1, a 'vkllm: ' message naming the problem, no crash.
expect_error() {  # pattern, command...
  local pattern=$1
  shift
  set +e
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc -eq 1 ] || fail "$* exited $rc: $err"
  [[ "$err" == vkllm:* ]] || fail "$*: message does not start with 'vkllm:': $err"
  grep -Eq "$pattern" <<<"$err" || fail "$*: message lacks '$pattern': $err"
}
echo 'not a gguf file at all' >"$tmp/plain.txt"
# A real model whose general.architecture says mamba (same length, so the file stays valid).
python3 - "$models/llama-2-tiny-random.gguf" "$tmp/mamba.gguf" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
key = b"general.architecture"
i = data.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<IQ", data, i) == (8, 5) and data[i + 12:i + 17] == b"llama"
data[i + 12:i + 17] = b"mamba"
open(sys.argv[2], "wb").write(data)
PY
for cmd in "generate --prompt hi" "debug logits --prompt hi" "bench --prompt 8 --gen 1"; do
  # shellcheck disable=SC2086
  expect_error "no-such.gguf" "$VKLLM_BIN" $cmd --model "$tmp/no-such.gguf"
  # shellcheck disable=SC2086
  expect_error "plain.txt|GGUF|magic" "$VKLLM_BIN" $cmd --model "$tmp/plain.txt"
  # shellcheck disable=SC2086
  expect_error "unsupported model architecture 'mamba'" "$VKLLM_BIN" $cmd --model "$tmp/mamba.gguf"
done
expect_error "no-such.txt" "$VKLLM_BIN" perplexity --model "$f16" --file "$tmp/no-such.txt"
echo "bad inputs: rejected with clear messages"
