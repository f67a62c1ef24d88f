// The official npm `ollama` client chatting with vkllm: chat and generate, streamed and not
// (greedy: both give the same text), abort mid-stream, ps, the errors it raises.
// Usage: node npm_chat.mjs http://127.0.0.1:PORT MODEL
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const [host, model] = process.argv.slice(2);
const ollama = new Ollama({ host });
const options = { temperature: 0, num_predict: 12 };

const messages = [{ role: "user", content: "Tell me about foxes." }];
const whole = await ollama.chat({ model, messages, options });
assert.equal(whole.done, true);
assert.equal(whole.message.role, "assistant");
assert.equal(whole.done_reason, "length");
assert.equal(whole.eval_count, 12);
assert.ok(whole.prompt_eval_count > 0 && whole.total_duration > 0);
assert.ok(whole.message.content.length > 0);

let streamed = "";
let chunks = 0;
let last;
for await (const part of await ollama.chat({ model, messages, options, stream: true })) {
  streamed += part.message.content;
  chunks++;
  last = part;
}
assert.equal(streamed, whole.message.content, "streamed chat == non-streamed chat");
// One chunk per generated token, as Ollama streams, however fast the backend produces them
// (every token of this greedy continuation decodes to text).
assert.equal(chunks, whole.eval_count + 1, `${chunks} chunks for ${whole.eval_count} tokens`);
assert.equal(last.done, true);
console.log(`ok: ollama.chat streamed (${chunks} chunks) == not streamed`);

const gen = await ollama.generate({ model, prompt: "Tell me about foxes.", options });
assert.equal(gen.done, true);
assert.ok(Array.isArray(gen.context) && gen.context.length > 12);
let gstreamed = "";
for await (const part of await ollama.generate({ model, prompt: "Tell me about foxes.", options, stream: true })) {
  gstreamed += part.response;
}
assert.equal(gstreamed, gen.response);
console.log("ok: ollama.generate streamed == not streamed, with context");

// A second turn that carries the first answer.
const turn2 = await ollama.chat({
  model,
  messages: [...messages, whole.message, { role: "user", content: "And wolves?" }],
  options,
});
assert.ok(turn2.prompt_eval_count > whole.prompt_eval_count);
console.log("ok: a second chat turn");

// Abort mid-stream: the client stops, the server keeps serving.
const stream = await ollama.chat({ model, messages, options: { num_predict: 500 }, stream: true });
let seen = 0;
for await (const part of stream) {
  if (++seen === 3) {
    stream.abort();
    break;
  }
}
const after = await ollama.chat({ model, messages, options });
assert.equal(after.message.content, whole.message.content);
console.log("ok: abort mid-stream, the next request is unaffected");

const ps = await ollama.ps();
assert.ok(ps.models.some((m) => m.name.startsWith(model)), JSON.stringify(ps));
assert.ok(ps.models[0].size > 0 && ps.models[0].expires_at);
console.log("ok: ollama.ps() lists the loaded model");

await assert.rejects(ollama.chat({ model: "no-such-model", messages }), (e) => {
  assert.equal(e.status_code, 404);
  assert.match(e.error, /not found/);
  return true;
});
await assert.rejects(
  ollama.chat({ model, messages, options: { temperature: "hot" } }),
  (e) => e.status_code === 400 && /must be of type float32/.test(e.error),
);
console.log("ok: errors raised with status and text");
