// Drives vkllm with the official npm `ollama` client (and `openai` where routes exist).
// Usage: node npm_client.mjs http://127.0.0.1:PORT
// (tests/node_modules is found by walking up from this file.)
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const host = process.argv[2];
const ollama = new Ollama({ host });

const { version } = await ollama.version();
assert.match(version, /^\d+\.\d+\.\d+/, `version ${version}`);
console.log(`ok: ollama.version() = ${version}`);
