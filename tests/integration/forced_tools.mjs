// tool_choice enforced in a model's own call syntax, through the official npm `openai` SDK:
// Harmony (gpt-oss), the built-in parsers' (Mistral [TOOL_CALLS]NAME[ARGS], Qwen XML, Gemma 4's
// call:NAME{...}, LFM2's [NAME(...)]) and template-read ones (Llama 4's [{"name", "parameters"}]).
// Usage: node forced_tools.mjs URL MODEL [EXTRA_JSON]  (EXTRA_JSON is merged into every request,
// e.g. {"reasoning_effort":"none"}). The models have random weights and sample hot: a call that
// comes out and parses, every time, is the constraint's doing. The tool names include one that
// is not an identifier ("get-weather"), which Harmony shows the model renamed.
import assert from "node:assert/strict";
import OpenAI from "openai";

const [url, model, extraJson] = process.argv.slice(2);
const extra = extraJson ? JSON.parse(extraJson) : {};
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "ignored", maxRetries: 0 });
const tools = [
  {
    type: "function",
    function: {
      name: "get-weather",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", enum: ["Paris", "Oslo", "Lima"] },
          days: { type: "integer", minimum: 1, maximum: 7 },
        },
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
const base = {
  model, tools, temperature: 1.5, max_tokens: 200, ...extra,
  messages: [{ role: "user", content: "What is the weather in Paris?" }],
};

function checkCall(call) {
  assert.equal(call.type, "function");
  assert.ok(call.id, "a call id");
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === "get-weather") {
    assert.ok(["Paris", "Oslo", "Lima"].includes(args.city), JSON.stringify(args));
    assert.ok(args.days === undefined || (Number.isInteger(args.days) && args.days >= 1 && args.days <= 7));
  } else {
    assert.equal(call.function.name, "get_time");
    assert.ok(Number.isInteger(args.utc_offset) && args.utc_offset >= -12 && args.utc_offset <= 14);
  }
}

// One call each (parallel_tool_calls false): a hot random model that may go on calling could
// otherwise run out of max_tokens in the middle of a call.
for (const seed of [1, 2, 3]) {
  const r = await client.chat.completions.create({
    ...base, seed, tool_choice: "required", parallel_tool_calls: false,
  });
  const msg = r.choices[0].message;
  assert.ok(msg.tool_calls?.length >= 1, `seed ${seed}: no tool call: ${JSON.stringify(msg)}`);
  msg.tool_calls.forEach(checkCall);
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  assert.ok(!msg.content?.trim(), `content next to forced calls: ${JSON.stringify(msg.content)}`);
}
console.log(`ok: ${model}: tool_choice required → calls that parse (3 seeds)`);

const free = await client.chat.completions.create({ ...base, seed: 1 });
assert.ok(!free.choices[0].message.tool_calls?.length, "an unforced random model called a tool");

for (const seed of [4, 5]) {
  const r = await client.chat.completions.create({
    ...base, seed, parallel_tool_calls: false,
    tool_choice: { type: "function", function: { name: "get-weather" } },
  });
  const calls = r.choices[0].message.tool_calls;
  assert.equal(calls?.length, 1, JSON.stringify(r.choices[0].message));
  assert.equal(calls[0].function.name, "get-weather");
  checkCall(calls[0]);
}
const stream = client.chat.completions.stream({
  ...base, seed: 6, tool_choice: "required", parallel_tool_calls: false,
});
const streamed = await stream.finalChatCompletion();
assert.equal(streamed.choices[0].message.tool_calls?.length, 1);
streamed.choices[0].message.tool_calls.forEach(checkCall);
console.log(`ok: ${model}: named function with parallel_tool_calls false → one call; streamed`);
