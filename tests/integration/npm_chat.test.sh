#!/usr/bin/env bash
# The real npm `ollama` client chats with vkllm (see npm_chat.mjs).
source "$(dirname "$0")/lib.sh"

gguf=$VKLLM_SHARED_DIR/testdata/models/llama-2-tiny-random.gguf
digest=sha256:$(sha256sum "$gguf" | cut -d' ' -f1)
vkllm_start
curl -s -o /dev/null -X POST "$VKLLM_URL/api/blobs/$digest" --data-binary "@$gguf"
req=$(jq -nc --arg d "$digest" '{model:"tiny", files:{"tiny.gguf":$d}, stream:false,
  template:"{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant:"}')
expect_eq "$(http_status POST "$VKLLM_URL/api/create" -d "$req")" 200 "create: $(body)"
node_client "$(dirname "$0")/npm_chat.mjs" "$VKLLM_URL" tiny || fail "npm ollama chat checks"
pass "npm ollama client chats"
