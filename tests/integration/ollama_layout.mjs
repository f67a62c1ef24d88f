// The npm `ollama` client chats with a model pulled in Ollama's converter layout and with its
// llama.cpp-layout twin (same random weights): greedy replies must be identical, and /api/show
// must report what the translated view holds, and vision: the tower inside the file is read as an
// mmproj (engine/gguf/inline_projector.h; tests/integration/vision.test.sh sends it images).
// Usage: node ollama_layout.mjs http://127.0.0.1:PORT TWIN MODEL...
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const [host, twin, ...models] = process.argv.slice(2);
const ollama = new Ollama({ host });
const options = { temperature: 0, num_predict: 10 };
const messages = [{ role: "user", content: "Where do foxes live?" }];

const want = await ollama.chat({ model: twin, messages, options });
assert.ok(want.message.content.length > 0, "the twin replies");
assert.equal(want.eval_count, 10);
for (const model of models) {
  const got = await ollama.chat({ model, messages, options });
  assert.equal(got.message.content, want.message.content, `${model} replies like its twin`);
  // The first tokenizes the prompt alone; later ones share its blob and cached prefix.
  if (model === models[0]) {
    assert.equal(got.prompt_eval_count, want.prompt_eval_count, `${model}: same prompt tokens`);
  }
  const show = await ollama.show({ model });
  assert.deepEqual(show.capabilities, ["completion", "vision"], `${model} capabilities`);
  assert.equal(show.model_info["gemma3.rope.freq_base"], 1000000, `${model}: translated rope base`);
  assert.equal(show.model_info["gemma3.vision.block_count"], undefined, `${model}: vision keys hidden`);
}
console.log(`ok: ${models.length} Ollama-layout models reply like their twin: ${JSON.stringify(want.message.content)}`);
