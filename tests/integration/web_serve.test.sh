#!/usr/bin/env bash
# How the binary serves the embedded UI: "/" stays Ollama's liveness text for API clients and
# sends browsers to /ui/; the gzip twin only to clients that accept gzip (same bytes once
# decompressed); hashed assets cached for a year, the page itself revalidated; real 404s for
# missing assets, the app shell for client-side routes.
source "$(dirname "$0")/lib.sh"

vkllm_start
dist=$VKLLM_SOURCE_DIR/web/dist
js=$(cd "$dist" && ls assets/*.js | head -1)
[ -n "$js" ] || fail "no script in web/dist/assets"

expect_eq "$(http_status GET "$VKLLM_URL/")" 200 "GET / (curl)"
expect_eq "$(body)" "Ollama is running" "liveness text"
expect_eq "$(http_status GET "$VKLLM_URL/" -H 'Accept: application/json')" 200 "GET / (JSON client)"
expect_eq "$(http_status HEAD "$VKLLM_URL/")" 200 "HEAD /"
hdrs=$(curl -s -D - -o /dev/null -H 'Accept: text/html,application/xhtml+xml,*/*;q=0.8' "$VKLLM_URL/")
echo "$hdrs" | grep -q '^HTTP/1.1 302' || fail "browser at /: $hdrs"
echo "$hdrs" | grep -qi '^location: /ui/' || fail "redirect target: $hdrs"
pass "/ answers API clients, redirects browsers to /ui/"

# Plain client: the original bytes.
curl -s -D "$TEST_TMP/h1" -o "$TEST_TMP/plain.js" "$VKLLM_URL/ui/$js"
cmp -s "$TEST_TMP/plain.js" "$dist/$js" || fail "plain $js differs from web/dist"
grep -qi '^content-encoding' "$TEST_TMP/h1" && fail "gzip sent to a client that did not ask: $(cat "$TEST_TMP/h1")"
grep -qi '^content-type: text/javascript' "$TEST_TMP/h1" || fail "script type: $(cat "$TEST_TMP/h1")"
grep -qi '^cache-control: public, max-age=31536000, immutable' "$TEST_TMP/h1" || fail "asset cache: $(cat "$TEST_TMP/h1")"
grep -qi '^vary: accept-encoding' "$TEST_TMP/h1" || fail "no Vary: $(cat "$TEST_TMP/h1")"
# gzip client: the twin, smaller, same content after decompression.
curl -s -D "$TEST_TMP/h2" -o "$TEST_TMP/packed.js.gz" -H 'Accept-Encoding: gzip, deflate, br' "$VKLLM_URL/ui/$js"
grep -qi '^content-encoding: gzip' "$TEST_TMP/h2" || fail "no gzip for a gzip client: $(cat "$TEST_TMP/h2")"
[ "$(stat -c %s "$TEST_TMP/packed.js.gz")" -lt "$(stat -c %s "$dist/$js")" ] || fail "gzip twin not smaller"
gunzip -c "$TEST_TMP/packed.js.gz" | cmp -s - "$dist/$js" || fail "gzip twin does not decompress to $js"
curl -s -D "$TEST_TMP/h3" -o /dev/null -H 'Accept-Encoding: gzip;q=0, br' "$VKLLM_URL/ui/$js"
grep -qi '^content-encoding' "$TEST_TMP/h3" && fail "gzip despite q=0: $(cat "$TEST_TMP/h3")"
pass "gzip twin only when accepted, identical content"

curl -s -D "$TEST_TMP/h4" -o "$TEST_TMP/index.html" "$VKLLM_URL/ui/"
cmp -s "$TEST_TMP/index.html" "$dist/index.html" || fail "/ui/ is not web/dist/index.html"
grep -qi '^cache-control: no-cache' "$TEST_TMP/h4" || fail "page cache: $(cat "$TEST_TMP/h4")"
grep -qi '^content-type: text/html' "$TEST_TMP/h4" || fail "page type: $(cat "$TEST_TMP/h4")"
expect_eq "$(http_status GET "$VKLLM_URL/ui/models")" 200 "client-side route"
cmp -s "$TEST_TMP/body" "$dist/index.html" || fail "client-side route did not get the app shell"
expect_eq "$(http_status GET "$VKLLM_URL/ui/assets/missing-abc123.js")" 404 "missing asset"
expect_eq "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$VKLLM_URL/ui")" "301 $VKLLM_URL/ui/" "/ui → /ui/"
pass "page revalidated, app shell for routes, 404 for missing assets"
