// Drives vkllm's /v1 routes with the official npm `openai` SDK.
// Usage: node openai.mjs http://127.0.0.1:PORT  (expects models "tiny" and "team/tiny:v1")
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: "ignored", maxRetries: 0 });
const messages = [{ role: "user", content: "The quick brown fox" }];

// chat.completions.create, not streamed and streamed (greedy: the same text).
const chat = await client.chat.completions.create({
  model: "tiny", messages, temperature: 0, max_tokens: 8,
});
assert.equal(chat.object, "chat.completion");
assert.equal(chat.choices[0].message.role, "assistant");
assert.equal(chat.choices[0].finish_reason, "length");
assert.equal(chat.usage.completion_tokens, 8);
const text = chat.choices[0].message.content;
assert.ok(text.length > 0, "empty completion");
console.log(`ok: chat.completions.create → ${JSON.stringify(text)}`);

const stream = await client.chat.completions.create({
  model: "tiny", messages, temperature: 0, max_tokens: 8, stream: true,
  stream_options: { include_usage: true },
});
let streamed = "";
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
assert.equal(streamed, text, "streamed = not streamed");
assert.equal(finish, "length");
assert.equal(usage.completion_tokens, 8);
console.log("ok: chat.completions.create stream:true (include_usage)");

// The SDK's streaming helper accumulates the chunks into a final completion.
const runner = client.chat.completions.stream({
  model: "tiny", messages, temperature: 0, max_tokens: 8,
});
const final = await runner.finalChatCompletion();
assert.equal(final.choices[0].message.content, text);
console.log("ok: chat.completions.stream().finalChatCompletion()");

// completions.create
const comp = await client.completions.create({
  model: "tiny", prompt: "Once upon a time", temperature: 0, max_tokens: 6,
});
assert.equal(comp.object, "text_completion");
assert.equal(comp.usage.completion_tokens, 6);
let compStreamed = "";
for await (const chunk of await client.completions.create({
  model: "tiny", prompt: "Once upon a time", temperature: 0, max_tokens: 6, stream: true,
})) {
  compStreamed += chunk.choices[0]?.text ?? "";
}
assert.equal(compStreamed, comp.choices[0].text);
console.log("ok: completions.create stream and not");

// models.list / retrieve
const ids = [];
for await (const m of client.models.list()) ids.push(m.id);
assert.deepEqual(ids.sort(), ["team/tiny:v1", "tiny:latest"]);
assert.equal((await client.models.retrieve("tiny")).id, "tiny");
const namespaced = await client.models.retrieve("team/tiny:v1");
assert.equal(namespaced.owned_by, "team");
console.log("ok: models.list and models.retrieve (namespaced too)");

// responses.create, not streamed and streamed.
const resp = await client.responses.create({
  model: "tiny", input: "The quick brown fox", temperature: 0, max_output_tokens: 8,
});
assert.equal(resp.status, "completed");
assert.equal(resp.output_text, text, "responses text = chat text for one user message");
let respText = "";
let completed = null;
for await (const ev of await client.responses.create({
  model: "tiny", input: "The quick brown fox", temperature: 0, max_output_tokens: 8, stream: true,
})) {
  if (ev.type === "response.output_text.delta") respText += ev.delta;
  if (ev.type === "response.completed") completed = ev.response;
}
assert.equal(respText, text);
assert.equal(completed.usage.output_tokens, 8);
console.log("ok: responses.create stream and not");

// Errors surface as the SDK's typed errors with their status.
await assert.rejects(
  client.chat.completions.create({ model: "nope", messages }),
  (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /model 'nope' not found/.test(e.message),
);
await assert.rejects(
  client.chat.completions.create({ model: "tiny", messages: [] }),
  (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.error?.type === "invalid_request_error",
);
await assert.rejects(client.models.retrieve("nope"), (e) => e instanceof OpenAI.NotFoundError);
await assert.rejects(
  client.responses.create({ model: "nope", input: "x", stream: true }),
  (e) => e instanceof OpenAI.NotFoundError && e.status === 404,
);
console.log("ok: errors are NotFoundError / BadRequestError with status");
