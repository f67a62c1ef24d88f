// The npm `ollama` client with a LoRA model on vkllm: /api/create's `adapters` map, /api/show,
// and the adapted model's greedy continuation against llama.cpp's with --lora.
// Usage: node lora.mjs URL CASE.json LORA_DIGEST QWEN_LORA_DIGEST BASE_DIGEST
//   (models "base" and "adapted" installed; the digests' blobs uploaded)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Ollama } from "ollama";

const [host, caseFile, loraDigest, qwenDigest, baseDigest] = process.argv.slice(2);
const ref = JSON.parse(readFileSync(caseFile, "utf8"));
const ollama = new Ollama({ host });

// llama.cpp's greedy tokens up to the first near-tie (two tokens within 0.01), as text.
let n = 0;
while (n < ref.greedy_tokens.length && ref.greedy_margins[n] >= 0.01) n++;
assert.ok(n >= 4, `only ${n} decided greedy steps in the reference`);
const detok = await fetch(`${host}/api/detokenize`, {
  method: "POST",
  body: JSON.stringify({ model: "adapted", tokens: ref.greedy_tokens.slice(0, n) }),
});
const want = (await detok.json()).content;

const options = { temperature: 0, num_predict: n };
const adapted = await ollama.generate({ model: "adapted", prompt: ref.prompt, raw: true, options });
assert.equal(adapted.response, want, "adapted model's greedy text");
assert.equal(adapted.prompt_eval_count, ref.prompt_tokens.length);
const base = await ollama.generate({ model: "base", prompt: ref.prompt, raw: true, options });
assert.notEqual(base.response, want, "the base alone gives llama.cpp's adapted text");
console.log(`ok: generate: ${n} greedy tokens as llama.cpp --lora`);

// /api/create with the adapters map, as `ollama create` sends it.
const created = await ollama.create({ model: "npm-lora", from: "base", adapters: { "lora.gguf": loraDigest } });
assert.equal(created.status, "success");
const shown = await ollama.show({ model: "npm-lora" });
assert.match(shown.modelfile, /^ADAPTER .+$/m);
const again = await ollama.generate({ model: "npm-lora", prompt: ref.prompt, raw: true, options });
assert.equal(again.response, want);
const chat = await ollama.chat({
  model: "npm-lora",
  messages: [{ role: "user", content: ref.prompt }],
  options: { temperature: 0, num_predict: 8 },
});
assert.equal(chat.message.role, "assistant");
assert.ok(chat.eval_count > 0 && chat.message.content.length > 0, JSON.stringify(chat));
console.log("ok: create with adapters, show, generate and chat");

const refused = async (request, pattern) =>
  assert.rejects(ollama.create(request), (e) => {
    assert.equal(e.status_code, 400, e.message);
    assert.match(e.message, pattern);
    return true;
  });
await refused({ model: "npm-bad-arch", from: "base", adapters: { "q.gguf": qwenDigest } },
  /invalid adapter: the adapter is for architecture 'qwen2', the model is 'llama'/);
await refused({ model: "npm-bad-kind", from: "base", adapters: { "m.gguf": baseDigest } },
  /invalid adapter: not a LoRA adapter: general.type/);
await refused(
  { model: "npm-bad-two", from: "base", adapters: { "a.gguf": loraDigest, "b.gguf": qwenDigest } },
  /only one adapter is currently supported/);
console.log("ok: mismatched adapters are 400s");
