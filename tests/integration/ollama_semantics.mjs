// The npm `ollama` client against vkllm's think semantics (issue 40 item 2).
// Usage: node ollama_semantics.mjs http://127.0.0.1:PORT  (expects "thinker", a thinking model)
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const ollama = new Ollama({ host: process.argv[2] });
const messages = [{ role: "user", content: "Why is the sky blue?" }];
const options = { temperature: 0, num_predict: 6 };

const absent = await ollama.chat({ model: "thinker", messages, options });
assert.ok(absent.message.thinking.length > 0, "think absent: a thinking model thinks");
const max = await ollama.chat({ model: "thinker", messages, options, think: "max" });
assert.ok(max.message.thinking.length > 0);
const off = await ollama.chat({ model: "thinker", messages, options, think: false });
assert.ok(!off.message.thinking && off.message.content.length > 0);
await assert.rejects(
  ollama.chat({ model: "thinker", messages, options, think: "extreme" }),
  (e) => e.status_code === 400 && /invalid think value: "extreme"/.test(e.error),
);
console.log("ok: ollama.chat think absent/max/false, an invalid level rejected with Ollama's text");

const { version } = await ollama.version();
assert.equal(version, "0.33.0");
console.log(`ok: ollama.version() → ${version}`);
