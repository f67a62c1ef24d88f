// tool_choice enforced, through the official npm `openai` SDK against vkllm (issue 40.4).
// Usage: node grammar_tools.mjs http://127.0.0.1:PORT  (expects model "tooly", whose template
// writes calls as <tool_call>{"name": ..., "arguments": ...}</tool_call>). The model has random
// weights and samples hot: a call that comes out and parses is the constraint's doing.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: `${process.argv[2]}/v1`, apiKey: "ignored", maxRetries: 0 });
const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather for a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", enum: ["Paris", "Oslo", "Lima"] } },
        required: ["city"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      parameters: {
        type: "object",
        properties: { utc_offset: { type: "integer", minimum: -12, maximum: 14 } },
        required: ["utc_offset"],
      },
    },
  },
];
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const base = { model: "tooly", messages, tools, temperature: 1.5, max_tokens: 200 };

function checkCall(call) {
  assert.equal(call.type, "function");
  assert.ok(call.id, "a call id");
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === "get_weather") {
    assert.ok(["Paris", "Oslo", "Lima"].includes(args.city), JSON.stringify(args));
  } else {
    assert.equal(call.function.name, "get_time");
    assert.ok(Number.isInteger(args.utc_offset) && args.utc_offset >= -12 && args.utc_offset <= 14);
  }
}

// "required": a call always comes out and parses, whatever the sampler draws.
for (const seed of [1, 2, 3, 4]) {
  const r = await client.chat.completions.create({ ...base, seed, tool_choice: "required" });
  const msg = r.choices[0].message;
  assert.ok(msg.tool_calls?.length >= 1, `seed ${seed}: no tool call: ${JSON.stringify(msg)}`);
  msg.tool_calls.forEach(checkCall);
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.ok(!msg.content?.trim(), `content next to forced calls: ${JSON.stringify(msg.content)}`);
}
console.log("ok: tool_choice required → calls that parse (4 seeds)");

// Without tool_choice the same sampler writes text, not calls: the calls above were forced.
const free = await client.chat.completions.create({ ...base, seed: 1 });
assert.ok(!free.choices[0].message.tool_calls?.length, "an unforced random model called a tool");
console.log("ok: tool_choice auto → the random model writes no call by itself");

// A named function: only that one.
for (const seed of [5, 6]) {
  const r = await client.chat.completions.create({
    ...base, seed, tool_choice: { type: "function", function: { name: "get_time" } },
  });
  const calls = r.choices[0].message.tool_calls;
  assert.ok(calls?.length >= 1);
  for (const c of calls) {
    assert.equal(c.function.name, "get_time");
    checkCall(c);
  }
}
console.log("ok: tool_choice {function: get_time} → only get_time");

// parallel_tool_calls false: exactly one call, streamed too.
for (const seed of [7, 8, 9]) {
  const r = await client.chat.completions.create({
    ...base, seed, tool_choice: "required", parallel_tool_calls: false,
  });
  assert.equal(r.choices[0].message.tool_calls?.length, 1, JSON.stringify(r.choices[0].message));
  checkCall(r.choices[0].message.tool_calls[0]);
}
const stream = client.chat.completions.stream({
  ...base, seed: 10, tool_choice: "required", parallel_tool_calls: false,
});
const streamed = await stream.finalChatCompletion();
assert.equal(streamed.choices[0].message.tool_calls?.length, 1);
checkCall(streamed.choices[0].message.tool_calls[0]);
console.log("ok: parallel_tool_calls false → one call (stream and not)");

// "none": the tools stay out of the prompt and no call comes.
const withTools = await client.chat.completions.create({ ...base, seed: 1, max_tokens: 1 });
const none = await client.chat.completions.create({ ...base, seed: 1, max_tokens: 8, tool_choice: "none" });
assert.ok(none.usage.prompt_tokens < withTools.usage.prompt_tokens, "tools still in the prompt");
assert.ok(!none.choices[0].message.tool_calls?.length);
console.log("ok: tool_choice none → no tools in the prompt, no call");

// A function the request does not offer: 400.
await assert.rejects(
  client.chat.completions.create({ ...base, tool_choice: { type: "function", function: { name: "nope" } } }),
  (e) => e.status === 400 && /nope/.test(e.message),
);
console.log("ok: tool_choice naming an unknown function → 400");

// /v1/responses: the same mechanism.
const resp = await client.responses.create({
  model: "tooly", input: "Weather in Oslo?", temperature: 1.5, max_output_tokens: 200,
  tools: tools.map((t) => ({ type: "function", ...t.function })),
  tool_choice: "required", parallel_tool_calls: false,
});
const calls = resp.output.filter((o) => o.type === "function_call");
assert.equal(calls.length, 1, JSON.stringify(resp.output));
checkCall({ type: "function", id: calls[0].call_id, function: calls[0] });
console.log("ok: /v1/responses tool_choice required, parallel_tool_calls false → one function_call");
