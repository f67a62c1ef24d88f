#!/usr/bin/env bash
# The committed web/dist (what the binary embeds) is exactly what web/src builds to with the
# pinned toolchain (web/package-lock.json, installed by scripts/setup with npm ci), the sources
# type-check, and the whole UI stays within its transfer budget: 300 KB gzipped.
source "$(dirname "$0")/lib.sh"

web=$VKLLM_SOURCE_DIR/web
[ -d "$web/node_modules/vite" ] || fail "web/node_modules missing: run scripts/setup (npm ci in web/)"
cd "$web"
npm ls --all >"$TEST_TMP/npm-ls.txt" 2>&1 \
  || fail "web/node_modules does not match package-lock.json (run scripts/setup): $(tail -5 "$TEST_TMP/npm-ls.txt")"
npx --no-install tsc --noEmit -p . >"$TEST_TMP/tsc.log" 2>&1 || fail "type errors: $(cat "$TEST_TMP/tsc.log")"
pass "web/src type-checks"

npx --no-install vite build --outDir "$TEST_TMP/dist" --emptyOutDir >"$TEST_TMP/build.log" 2>&1 \
  || fail "vite build: $(tail -20 "$TEST_TMP/build.log")"
diff -r "$TEST_TMP/dist" "$web/dist" >"$TEST_TMP/diff.txt" 2>&1 \
  || fail "web/dist is not what web/src builds to; run 'npm run build' in web/ and commit dist: $(head -20 "$TEST_TMP/diff.txt")"
pass "committed web/dist equals a fresh build of web/src"

# Transfer size: what a browser downloads, every file gzipped (the server sends the .gz twins).
total=0
while IFS= read -r -d '' f; do
  if [ -f "$f.gz" ]; then size=$(stat -c %s "$f.gz"); else size=$(gzip -9c "$f" | wc -c); fi
  total=$((total + size))
done < <(find "$web/dist" -type f ! -name '*.gz' -print0)
echo "web UI transfer size: $total bytes gzipped (budget 307200)"
[ "$total" -le 307200 ] || fail "the UI is $total bytes gzipped, over the 300 KB budget"
pass "bundle within 300 KB gzipped"
