// Drives vkllm's /v1/messages with the official npm `@anthropic-ai/sdk`.
// Usage: node anthropic.mjs http://127.0.0.1:PORT [KEYED_URL KEY]
// Expects "tiny" (no thinking, no tools) and "thinker" (a template with <think> tags and tools;
// JSON tool calls), both the random-weight fixture model.
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";

const [baseURL, keyedURL, key] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey: "ignored", maxRetries: 0 });
const messages = [{ role: "user", content: "The quick brown fox" }];

// messages.create, not streamed and streamed (greedy: the same text).
const msg = await client.messages.create({
  model: "tiny", max_tokens: 8, temperature: 0, messages,
});
assert.equal(msg.type, "message");
assert.equal(msg.role, "assistant");
assert.match(msg.id, /^msg_/);
assert.equal(msg.stop_reason, "max_tokens");
assert.equal(msg.usage.output_tokens, 8);
assert.ok(msg.usage.input_tokens + msg.usage.cache_read_input_tokens > 3);
assert.equal(msg.content.length, 1);
assert.equal(msg.content[0].type, "text");
const text = msg.content[0].text;
assert.ok(text.length > 0, "empty text");
console.log(`ok: messages.create → ${JSON.stringify(text)}`);

const events = [];
const raw = await client.messages.create({
  model: "tiny", max_tokens: 8, temperature: 0, messages, stream: true,
});
let streamed = "";
for await (const ev of raw) {
  events.push(ev.type);
  if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") streamed += ev.delta.text;
}
assert.equal(streamed, text, "streamed = not streamed");
assert.deepEqual(events.slice(0, 2), ["message_start", "content_block_start"]);
assert.deepEqual(events.slice(-3), ["content_block_stop", "message_delta", "message_stop"]);
const helper = client.messages.stream({ model: "tiny", max_tokens: 8, temperature: 0, messages });
let helperText = "";
helper.on("text", (t) => { helperText += t; });
const final = await helper.finalMessage();
assert.equal(final.content[0].text, text);
assert.equal(helperText, text);
assert.equal(final.stop_reason, "max_tokens");
assert.equal(final.usage.output_tokens, 8);
assert.ok(final.usage.input_tokens + final.usage.cache_read_input_tokens > 3);
console.log("ok: messages.create stream:true and messages.stream().finalMessage()");

// stop_sequences: generation ends before the client's stop string, stop_reason stop_sequence.
const stop = text.slice(3, 6);
const stopped = await client.messages.create({
  model: "tiny", max_tokens: 8, temperature: 0, messages, stop_sequences: [stop],
});
assert.equal(stopped.stop_reason, "stop_sequence");
assert.equal(stopped.stop_sequence, stop);
assert.equal(stopped.content[0]?.text ?? "", text.slice(0, text.indexOf(stop)));
console.log("ok: stop_sequences → stop_reason stop_sequence");

// count_tokens: the prompt the same request renders (cache hits and evaluated tokens together).
const system = [{ type: "text", text: "You are a helpful assistant.", cache_control: { type: "ephemeral" } }];
const counted = await client.messages.countTokens({ model: "tiny", system, messages });
const used = await client.messages.create({ model: "tiny", max_tokens: 2, system, messages });
assert.equal(counted.input_tokens, used.usage.input_tokens + used.usage.cache_read_input_tokens);
console.log(`ok: messages.countTokens → ${counted.input_tokens} = the request's input tokens`);

// thinking: the thinker's output opens in <think>, so it all comes back as thinking.
const thought = await client.messages.create({
  model: "thinker", max_tokens: 6, temperature: 0, messages,
  thinking: { type: "enabled", budget_tokens: 2048 },
});
assert.equal(thought.content[0].type, "thinking");
assert.ok(thought.content[0].thinking.length > 0);
let thinkingStreamed = "";
const thinkingStream = client.messages.stream({
  model: "thinker", max_tokens: 6, temperature: 0, messages,
  thinking: { type: "enabled", budget_tokens: 2048 },
});
thinkingStream.on("thinking", (delta) => { thinkingStreamed += delta; });
const thoughtFinal = await thinkingStream.finalMessage();
assert.equal(thinkingStreamed, thought.content[0].thinking);
assert.equal(thoughtFinal.content[0].thinking, thought.content[0].thinking);
// A model without thinking ignores the request, as Ollama's /v1/messages does.
const plain = await client.messages.create({
  model: "tiny", max_tokens: 4, temperature: 0, messages,
  thinking: { type: "enabled", budget_tokens: 2048 },
});
assert.equal(plain.content[0].type, "text");
console.log("ok: thinking → thinking blocks (thinking_delta), dropped for a model without it");

// A tool loop: the call is forced with Ollama's `format` (a schema only the call fits), the
// result goes back as a tool_result, and the model answers.
const tools = [{
  name: "get_weather", description: "Current weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
}];
const callSchema = {
  type: "object",
  properties: {
    name: { enum: ["get_weather"] },
    arguments: { type: "object", properties: { city: { enum: ["Paris"] } }, required: ["city"] },
  },
  required: ["name", "arguments"],
};
const ask = [{ role: "user", content: "What is the weather in Paris?" }];
const toolStream = client.messages.stream({
  model: "thinker", max_tokens: 200, temperature: 0, tools, messages: ask,
  thinking: { type: "disabled" }, format: callSchema,
});
let inputJson = "";
toolStream.on("inputJson", (partial) => { inputJson += partial; });
const call = await toolStream.finalMessage();
assert.equal(call.stop_reason, "tool_use", JSON.stringify(call));
const use = call.content.find((b) => b.type === "tool_use");
assert.ok(use, JSON.stringify(call.content));
assert.ok(use.id.length > 0, "tool_use without an id");
assert.equal(use.name, "get_weather");
assert.deepEqual(use.input, { city: "Paris" });
assert.deepEqual(JSON.parse(inputJson), { city: "Paris" });
const answer = await client.messages.create({
  model: "thinker", max_tokens: 6, temperature: 0, tools, thinking: { type: "disabled" },
  messages: [...ask, { role: "assistant", content: call.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny, 21 C" }] }],
});
assert.equal(answer.content[0].type, "text");
assert.equal(answer.stop_reason, "max_tokens");
console.log("ok: tool loop: tool_use (input_json_delta) → tool_result → answer");

// tool_choice any / tool force a call with no `format`: decoding is constrained to the model's
// own tool-call syntax and the tool's input_schema, so even a random-weight model calls the tool
// (an enum keeps its arguments short; a free string could run to max_tokens).
const enumTools = [{
  name: "get_weather", description: "Current weather in a city",
  input_schema: { type: "object", properties: { city: { enum: ["Paris", "Rome"] } }, required: ["city"] },
}];
for (const tool_choice of [{ type: "any" }, { type: "tool", name: "get_weather" }]) {
  const forced = await client.messages.create({
    model: "thinker", max_tokens: 200, temperature: 1, tools: enumTools, messages: ask,
    thinking: { type: "disabled" }, tool_choice,
  });
  assert.equal(forced.stop_reason, "tool_use", JSON.stringify(forced));
  const block = forced.content.find((b) => b.type === "tool_use");
  assert.ok(block && block.name === "get_weather", JSON.stringify(forced.content));
  assert.equal(typeof block.input, "object", JSON.stringify(block));
}
console.log("ok: tool_choice any / tool force a tool_use block");

// Errors are the SDK's typed errors with Anthropic's error types.
await assert.rejects(
  client.messages.create({ model: "nope", max_tokens: 4, messages }),
  (e) => e instanceof Anthropic.NotFoundError && e.status === 404 &&
    e.error?.error?.type === "not_found_error" && /model 'nope' not found/.test(e.message),
);
await assert.rejects(
  client.messages.create({ model: "tiny", max_tokens: 4, messages: [] }),
  (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.type === "invalid_request_error",
);
await assert.rejects(
  client.messages.create({
    model: "tiny", max_tokens: 4,
    messages: [{ role: "user", content: [
      { type: "image", source: { type: "base64", media_type: "image/png", data: "aGVsbG8=" } },
      { type: "text", text: "What is this?" }] }],
  }),
  (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.message === '"tiny" does not support images',
);
await assert.rejects(
  client.messages.create({ model: "nope", max_tokens: 4, messages, stream: true }),
  (e) => e instanceof Anthropic.NotFoundError,
);
console.log("ok: errors: NotFoundError / BadRequestError with Anthropic's error types");

// API keys: x-api-key (the SDK's apiKey) and Authorization: Bearer (authToken) both pass.
if (keyedURL) {
  const keyed = new Anthropic({ baseURL: keyedURL, apiKey: key, maxRetries: 0 });
  assert.equal((await keyed.messages.create({ model: "tiny", max_tokens: 2, messages })).type, "message");
  const bearer = new Anthropic({ baseURL: keyedURL, apiKey: null, authToken: key, maxRetries: 0 });
  assert.equal((await bearer.messages.countTokens({ model: "tiny", messages })).input_tokens > 0, true);
  const wrong = new Anthropic({ baseURL: keyedURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(
    wrong.messages.create({ model: "tiny", max_tokens: 2, messages }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === "authentication_error",
  );
  console.log("ok: VKLLM_API_KEY: x-api-key and Bearer accepted, a wrong key AuthenticationError");
}
