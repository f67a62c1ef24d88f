// Embeddings and rerank through the real npm `ollama` and `openai` clients against vkllm serve,
// checked against the scalar reference (tests/tools/reference_embed, no engine code).
// Usage: node npm_embed.mjs URL REFERENCE_BIN EMBED_GGUF RERANK_GGUF DECODER_GGUF GEMMA_GGUF
// (models "nomic" = EMBED_GGUF, "rr" = RERANK_GGUF, "q3" = DECODER_GGUF (qwen3 with last-token
// pooling), "eg" = GEMMA_GGUF (gemma-embedding; GEMMA_GGUF "" skips it) and "tiny" (generative)
// installed)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { Ollama } from "ollama";
import OpenAI from "openai";

const [host, referenceBin, embedGguf, rerankGguf, decoderGguf, gemmaGguf] = process.argv.slice(2);
const ollama = new Ollama({ host });
const openai = new OpenAI({ baseURL: `${host}/v1`, apiKey: "ollama" });

const reference = (gguf, mode, ...texts) =>
  JSON.parse(execFileSync(referenceBin, [gguf, mode, ...texts], { encoding: "utf8" }));
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));
const unit = (v) => v.map((x) => x / norm(v));

const texts = [
  "The quick brown fox jumps over the lazy dog.",
  "Llamas are domesticated South American camelids.",
  "Vulkan is a low-overhead, cross-platform API for 3D graphics and computing.",
];

// ---- ollama.embed
const one = await ollama.embed({ model: "nomic", input: texts[0] });
assert.equal(one.model, "nomic");
assert.equal(one.embeddings.length, 1);
assert.equal(one.embeddings[0].length, 128);
assert.ok(Math.abs(norm(one.embeddings[0]) - 1) < 1e-5, "unit norm");
assert.ok(one.prompt_eval_count > 2 && one.total_duration > 0, JSON.stringify(one).slice(0, 200));

const many = await ollama.embed({ model: "nomic", input: texts });
assert.equal(many.embeddings.length, 3);
const want = reference(embedGguf, "embed", ...texts);
for (let i = 0; i < texts.length; i++) {
  assert.ok(cosine(many.embeddings[i], want[i]) >= 0.9999, `input ${i} vs reference`);
}
assert.ok(cosine(many.embeddings[0], one.embeddings[0]) > 0.99999, "batched == alone");
console.log("ok: ollama.embed() string and array, unit norm, matches the scalar reference");

const q3 = await ollama.embed({ model: "q3", input: texts });
const q3want = reference(decoderGguf, "embed", ...texts);
q3.embeddings.forEach((v, i) => assert.ok(cosine(v, q3want[i]) >= 0.9999, `q3 input ${i}`));
console.log("ok: a decoder embedder (qwen3, last token) matches the scalar reference");

// EmbeddingGemma: Matryoshka `dimensions` keeps a prefix of the full vector, re-normalised.
if (gemmaGguf) {
  const egWant = reference(gemmaGguf, "embed", ...texts);
  const eg = await ollama.embed({ model: "eg", input: texts });
  eg.embeddings.forEach((v, i) => assert.ok(cosine(v, egWant[i]) >= 0.9999, `eg input ${i}`));
  const egShort = await ollama.embed({ model: "eg", input: texts, dimensions: 32 });
  egShort.embeddings.forEach((v, i) => {
    assert.equal(v.length, 32);
    assert.ok(Math.abs(norm(v) - 1) < 1e-5, "unit norm after truncation");
    assert.ok(cosine(v, unit(egWant[i].slice(0, 32))) >= 0.9999, `eg input ${i}, 32 dimensions`);
  });
  const egOpenai = await openai.embeddings.create({ model: "eg", input: texts[2], dimensions: 64 });
  assert.equal(egOpenai.data[0].embedding.length, 64);
  assert.ok(cosine(egOpenai.data[0].embedding, unit(egWant[2].slice(0, 64))) >= 0.9999);
  console.log("ok: gemma-embedding matches the scalar reference, dimensions 32 (ollama) and 64 (openai)");
}

const short = await ollama.embed({ model: "nomic", input: texts[1], dimensions: 16 });
assert.equal(short.embeddings[0].length, 16);
assert.ok(Math.abs(norm(short.embeddings[0]) - 1) < 1e-5);
const prefix = unit(many.embeddings[1].slice(0, 16));
assert.ok(cosine(short.embeddings[0], prefix) > 0.99999, "dimensions re-normalises the prefix");
console.log("ok: dimensions");

const long = "llama ".repeat(40);
const cut = await ollama.embed({ model: "nomic", input: long, options: { num_ctx: 16 } });
assert.equal(cut.prompt_eval_count, 16, "truncated to num_ctx (specials included)");
await assert.rejects(
  ollama.embed({ model: "nomic", input: long, truncate: false, options: { num_ctx: 16 } }),
  (e) => e.status_code === 400 && /the input length exceeds the context length/.test(e.message),
);
console.log("ok: truncate");

for (const input of ["", []]) {
  const empty = await ollama.embed({ model: "nomic", input });
  assert.deepEqual(empty.embeddings, []);
}
await assert.rejects(ollama.embed({ model: "nomic", input: ["a", 1] }), (e) =>
  e.status_code === 400 && e.message === "invalid input type");
await assert.rejects(ollama.embed({ model: "no-such", input: "x" }), (e) =>
  e.status_code === 404 && e.message === 'model "no-such" not found, try pulling it first');
await assert.rejects(ollama.embed({ model: "tiny", input: "x" }), (e) => e.status_code === 501);
await assert.rejects(ollama.embed({ model: "rr", input: "x" }), (e) =>
  e.status_code === 400 && /is a reranking model/.test(e.message));
console.log("ok: empty input, bad input, unknown and generative models");

await assert.rejects(
  ollama.embed({ model: "nomic", input: "x", options: { num_ctx: "big" } }),
  (e) => e.status_code === 400 && /option "num_ctx" must be of type integer/.test(e.message),
);
// A client that goes away mid-request: its inputs are dropped, the server keeps serving.
const ac = new AbortController();
const aborted = fetch(`${host}/api/embed`, {
  method: "POST",
  body: JSON.stringify({ model: "nomic", input: Array(64).fill("llama ".repeat(200)) }),
  signal: ac.signal,
}).catch((e) => e.name);
setTimeout(() => ac.abort(), 50);
assert.equal(await aborted, "AbortError");
const after = await ollama.embed({ model: "nomic", input: texts[0] });
assert.ok(cosine(after.embeddings[0], one.embeddings[0]) > 0.99999, "served after a cancel");

// Concurrent requests share steps and still get their own vectors.
const parallel = await Promise.all(texts.map((t) => ollama.embed({ model: "nomic", input: t })));
parallel.forEach((r, i) => assert.ok(cosine(r.embeddings[0], many.embeddings[i]) > 0.99999));
console.log("ok: concurrent requests");

const legacy = await ollama.embeddings({ model: "nomic", prompt: texts[2] });
assert.equal(legacy.embedding.length, 128);
assert.ok(Math.abs(norm(legacy.embedding) - 1) > 1e-3, "legacy vectors are not normalised");
assert.ok(cosine(unit(legacy.embedding), many.embeddings[2]) > 0.99999);
console.log("ok: ollama.embeddings() (legacy, raw)");

const shown = await ollama.show({ model: "nomic" });
assert.ok(shown.capabilities.includes("embedding"), JSON.stringify(shown.capabilities));
assert.ok(!shown.capabilities.includes("completion"));
const shownRr = await ollama.show({ model: "rr" });
assert.deepEqual(shownRr.capabilities, ["embedding", "rerank"]);
console.log("ok: /api/show capabilities");

// ---- OpenAI
const sdk = await openai.embeddings.create({ model: "nomic", input: texts }); // SDK: base64
const floats = await openai.embeddings.create({
  model: "nomic",
  input: texts,
  encoding_format: "float",
});
assert.equal(floats.object, "list");
assert.equal(floats.data.length, 3);
assert.equal(floats.model, "nomic");
assert.ok(floats.usage.prompt_tokens > 0 && floats.usage.total_tokens === floats.usage.prompt_tokens);
floats.data.forEach((d, i) => {
  assert.equal(d.index, i);
  assert.equal(d.object, "embedding");
  assert.deepEqual(sdk.data[i].embedding, d.embedding.map(Math.fround), "base64 == float");
  assert.ok(cosine(d.embedding, want[i]) >= 0.9999);
});
const dims = await openai.embeddings.create({ model: "nomic", input: "x", dimensions: 8 });
assert.equal(dims.data[0].embedding.length, 8);
const bad = async (body, status, message) =>
  assert.rejects(openai.embeddings.create(body), (e) => e.status === status && e.message.includes(message));
await bad({ model: "nomic", input: [] }, 400, "invalid input");
await bad({ model: "nomic", input: [[1, 2, 3]] }, 400, "invalid input type");
await bad({ model: "nomic", input: "x", encoding_format: "int8" }, 400,
  "Invalid value for 'encoding_format' = int8. Supported values: ['float', 'base64'].");
await bad({ model: "no-such", input: "x" }, 404, "not found");
console.log("ok: openai.embeddings.create() float, base64, dimensions, errors");

// ---- Rerank
const query = "what is a llama";
const docs = [
  "A llama is a domesticated South American camelid.",
  "Paris is the capital of France.",
  "The quick brown fox jumps over the lazy dog.",
  "Llamas live in the Andes.",
];
const scores = reference(rerankGguf, "rerank", query, ...docs);
const post = async (path, body) => {
  const r = await fetch(`${host}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
};
const ranked = await post("/api/rerank", { model: "rr", query, documents: docs, return_documents: true });
assert.equal(ranked.status, 200, JSON.stringify(ranked.json));
const results = ranked.json.results;
assert.equal(results.length, docs.length);
for (const r of results) {
  assert.ok(Math.abs(r.relevance_score - scores[r.index]) < 2e-3, `doc ${r.index} score`);
  assert.equal(r.document.text, docs[r.index]);
}
for (let i = 0; i + 1 < results.length; i++) {
  assert.ok(results[i].relevance_score >= results[i + 1].relevance_score, "best first");
}
const order = scores.map((s, i) => [s, i]).sort((a, b) => b[0] - a[0]);
if (order[0][0] - order[1][0] > 1e-2) assert.equal(results[0].index, order[0][1], "top document");
const top2 = await post("/v1/rerank", { model: "rr", query, documents: docs.map((text) => ({ text })), top_n: 2 });
assert.equal(top2.status, 200);
assert.deepEqual(top2.json.results.map((r) => r.index), results.slice(0, 2).map((r) => r.index));
assert.equal(top2.json.results[0].document, undefined);
assert.ok(top2.json.usage.total_tokens > 0);
const notReranker = await post("/api/rerank", { model: "nomic", query, documents: docs });
assert.equal(notReranker.status, 400);
assert.match(notReranker.json.error, /does not support reranking/);
const noDocs = await post("/v1/rerank", { model: "rr", query, documents: [] });
assert.equal(noDocs.status, 400);
assert.equal(noDocs.json.error.type, "invalid_request_error");
console.log("ok: /api/rerank and /v1/rerank order documents as the scalar reference does");
