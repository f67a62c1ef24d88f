#!/usr/bin/env bash
# The web UI's own logic (NDJSON stream parsing, markdown and maths sanitising, KaTeX output,
# IndexedDB storage and exports, versions of messages, attachments and token estimates, the
# context window, metrics, Modelfile parsing and the pacing of a streamed reply's updates) under
# vitest, the toolchain's test runner (tests in web/src/**/*.test.ts).
source "$(dirname "$0")/lib.sh"

web=$VKLLM_SOURCE_DIR/web
[ -d "$web/node_modules/vitest" ] || fail "web/node_modules missing: run scripts/setup (npm ci in web/)"
cd "$web"
npx --no-install vitest run --no-color --reporter=default >"$TEST_TMP/vitest.log" 2>&1 \
  || { cat "$TEST_TMP/vitest.log"; fail "vitest"; }
grep -E "Test Files|Tests " "$TEST_TMP/vitest.log"
pass "web unit tests"
