#!/usr/bin/env bash
# The real npm `ollama` client against vkllm serve.
source "$(dirname "$0")/lib.sh"

vkllm_start
node_client "$(dirname "$0")/npm_client.mjs" "$VKLLM_URL" || fail "npm ollama client checks"
pass "npm ollama client"
