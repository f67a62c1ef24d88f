#!/usr/bin/env bash
# The committed web/dist (what the binary embeds) is exactly what web/src builds to with the
# pinned toolchain (web/package-lock.json, installed by scripts/setup with npm ci), the sources
# type-check, and the UI's first load stays within its transfer budget: 300 KB gzipped (the
# PDF-text and maths chunks load only when used; their sizes are printed).
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

# Transfer size of the first load (what a browser downloads, gzipped as the server sends it, to
# show the UI): index.html, what it links, and what those scripts import statically. Everything
# else is a lazy chunk (PDF text, maths) fetched only when used; each is reported, none may leave
# the origin (no absolute URLs to other hosts in the built code's imports).
# What the server sends: the .gz twin when there is one, else the file itself (woff2 fonts).
gz_size() { if [ -f "$1.gz" ]; then stat -c %s "$1.gz"; else stat -c %s "$1"; fi; }
declare -A first=([index.html]=1)
queue=(index.html)
while [ ${#queue[@]} -gt 0 ]; do
  f=${queue[0]}
  queue=("${queue[@]:1}")
  if [[ $f == *.html ]]; then
    refs=$(grep -oE '(src|href)="\./[^"]+"' "$web/dist/$f" | sed -E 's/.*"\.\/([^"]+)"/\1/' || true)
  elif [[ $f == *.js ]]; then
    # static imports only: `import ... from "./x.js"` / `import "./x.js"`, not import("./x.js")
    refs=$(grep -oE '(from|import)"\./[^"]+\.js"' "$web/dist/$f" | sed -E 's/.*"\.\/([^"]+)"/assets\/\1/' || true)
  else
    refs=""
  fi
  for r in $refs; do
    [ -f "$web/dist/$r" ] || fail "$f refers to $r, which is not in dist"
    if [ -z "${first[$r]:-}" ]; then first[$r]=1; queue+=("$r"); fi
  done
done
total=0
for f in "${!first[@]}"; do
  size=$(gz_size "$web/dist/$f")
  total=$((total + size))
  echo "first load: $f $size bytes gzipped"
done
[ "${#first[@]}" -ge 3 ] || fail "first load found only ${!first[*]}: index.html should link a script and a stylesheet"
echo "web UI first load: $total bytes gzipped (budget 307200)"
[ "$total" -le 307200 ] || fail "the UI's first load is $total bytes gzipped, over the 300 KB budget"
pass "first load within 300 KB gzipped"

lazy=0
fonts=0
while IFS= read -r -d '' f; do
  rel=${f#"$web/dist/"}
  [ -n "${first[$rel]:-}" ] && continue
  size=$(gz_size "$f")
  lazy=$((lazy + size))
  case $rel in
    *.woff2) fonts=$((fonts + size)) ;;
    *) echo "lazy chunk: $rel $size bytes gzipped" ;;
  esac
done < <(find "$web/dist" -type f ! -name '*.gz' -print0 | sort -z)
echo "lazy chunk: KaTeX fonts (woff2, only those a formula uses are fetched) $fonts bytes"
echo "web UI lazy chunks: $lazy bytes in all (as sent)"
grep -q 'pdf.worker' <(ls "$web/dist/assets") || fail "the PDF.js worker is not an asset of the bundle"
if grep -lE '(import\(|from)"https?://' "$web"/dist/assets/*.js "$web"/dist/assets/*.mjs >/dev/null 2>&1; then
  fail "a chunk imports from another origin"
fi
pass "lazy chunks reported; the PDF worker is served from the bundle"
