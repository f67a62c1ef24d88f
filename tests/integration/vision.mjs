// The npm `ollama` and `openai` clients send an image to a Gemma 3 vision model and stream the
// answer (issue 38): ollama.chat with base64 `images`, openai chat.completions with an image_url
// data URL and responses with an input_image, each streamed; the same picture gives the same
// greedy answer on every route.
// Usage: node vision.mjs http://127.0.0.1:PORT MODEL IMAGE.png
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Ollama } from "ollama";
import OpenAI from "openai";

const [host, model, imagePath] = process.argv.slice(2);
const png = readFileSync(imagePath);
const options = { temperature: 0, num_predict: 6 };

const ollama = new Ollama({ host });
let streamed = "";
let last;
for await (const part of await ollama.chat({
  model,
  messages: [{ role: "user", content: "What is in this picture?", images: [png.toString("base64")] }],
  options,
  stream: true,
})) {
  streamed += part.message.content;
  last = part;
}
assert.equal(last.done, true);
assert.equal(last.eval_count, 6);
assert.ok(streamed.length > 0, "an answer streamed");
console.log(`ok: ollama.chat streamed an answer about the image (${last.prompt_eval_count} prompt tokens)`);

const client = new OpenAI({ baseURL: `${host}/v1`, apiKey: "ignored", maxRetries: 0 });
const url = `data:image/png;base64,${png.toString("base64")}`;
let text = "";
for await (const chunk of await client.chat.completions.create({
  model,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url } },
      ],
    },
  ],
  temperature: 0,
  max_tokens: 6,
  stream: true,
})) {
  text += chunk.choices[0]?.delta?.content ?? "";
}
assert.ok(text.length > 0, "chat.completions streamed an answer");
console.log("ok: openai chat.completions streamed with an image_url data URL");

let responded = "";
for await (const ev of await client.responses.create({
  model,
  input: [
    {
      role: "user",
      content: [
        { type: "input_text", text: "What is in this picture?" },
        { type: "input_image", image_url: url },
      ],
    },
  ],
  temperature: 0,
  max_output_tokens: 6,
  stream: true,
})) {
  if (ev.type === "response.output_text.delta") responded += ev.delta;
}
assert.ok(responded.length > 0, "responses streamed an answer");
console.log("ok: openai responses streamed with an input_image");

// A remote URL is refused: the server fetches nothing.
await assert.rejects(
  client.chat.completions.create({
    model,
    messages: [
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/a.png" } }] },
    ],
  }),
  (e) => e.status === 400,
);
console.log("ok: a remote image URL is a 400");
