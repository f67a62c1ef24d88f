// The npm `ollama` client with a model created with a draft model (speculative decoding) on
// vkllm: /api/create's `draft_files` map through ollama.create, /api/show's Modelfile naming the
// draft, and chat: the greedy text with the draft equals the same weights' without one.
// Usage: node draft_model.mjs URL TARGET_DIGEST DRAFT_DIGEST
//   (model "plain" installed from the target; both blobs uploaded)
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const [host, targetDigest, draftDigest] = process.argv.slice(2);
const ollama = new Ollama({ host });

const created = await ollama.create({
  model: "drafted",
  files: { "tolstoy-mem.gguf": targetDigest },
  draft_files: { "tolstoy-gen.gguf": draftDigest },
  template: "{{ .Prompt }}",
});
assert.equal(created.status, "success");
const shown = await ollama.show({ model: "drafted" });
const draftLine = shown.modelfile.split("\n").find((l) => l.startsWith("DRAFT "));
assert.ok(draftLine, `no DRAFT line in the Modelfile:\n${shown.modelfile}`);
assert.ok(draftLine.includes(draftDigest.replace(":", "-")), draftLine);
console.log("ok: ollama.create with draft_files; show's Modelfile names the draft");

const messages = [{ role: "user", content: "It was in July, 1805, and the speaker was the well-known Anna Pavlovna" }];
const options = { temperature: 0, num_predict: 24 };
const plain = await ollama.chat({ model: "plain", messages, options });
const drafted = await ollama.chat({ model: "drafted", messages, options });
assert.equal(drafted.message.content, plain.message.content, "greedy text with the draft");
assert.equal(drafted.eval_count, plain.eval_count);
// draft_num_predict 0 turns the draft off for a request: still the same text.
const off = await ollama.chat({ model: "drafted", messages, options: { ...options, draft_num_predict: 0 } });
assert.equal(off.message.content, plain.message.content);
console.log(`ok: ollama.chat: the same ${plain.eval_count} greedy tokens with the draft and without`);
