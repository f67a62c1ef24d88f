// The npm `ollama` client's model management against vkllm: list, show, create, pull, delete.
// Usage: node npm_models.mjs http://127.0.0.1:PORT   (a model "tiny" must be installed)
import assert from "node:assert/strict";
import { Ollama } from "ollama";

const host = process.argv[2];
const port = new URL(host).port;
const ollama = new Ollama({ host });

const listed = await ollama.list();
const tiny = listed.models.find((m) => m.name === "tiny:latest");
assert.ok(tiny, `tiny in ${JSON.stringify(listed)}`);
assert.equal(tiny.model, "tiny:latest");
assert.match(tiny.digest, /^[0-9a-f]{64}$/);
assert.equal(tiny.details.family, "llama");
assert.ok(!isNaN(Date.parse(tiny.modified_at)), "modified_at parses");
console.log("ok: ollama.list()");

const shown = await ollama.show({ model: "tiny" });
assert.equal(shown.model_info["general.architecture"], "llama");
assert.ok(shown.capabilities.includes("completion"));
assert.ok(shown.modelfile.includes("FROM "));
console.log("ok: ollama.show()");

const created = await ollama.create({ model: "npm-made", from: "tiny", system: "from npm" });
assert.equal(created.status, "success");
const progress = [];
for await (const part of await ollama.create({ model: "npm-streamed", from: "tiny", stream: true })) {
  progress.push(part.status);
}
assert.equal(progress.at(-1), "success");
assert.equal((await ollama.show({ model: "npm-made" })).system, "from npm");
console.log("ok: ollama.create() (stream:false and stream:true)");

// Pull this server's own model through its read-only /v2/ view under a registry name.
const pulled = await ollama.pull({ model: `127.0.0.1:${port}/library/tiny:latest`, insecure: true });
assert.equal(pulled.status, "success");
const after = await ollama.list();
assert.ok(after.models.some((m) => m.name === `127.0.0.1:${port}/library/tiny:latest`));
console.log("ok: ollama.pull()");

await assert.rejects(ollama.pull({ model: "../bad" }), (e) => e.status_code === 400);
await assert.rejects(ollama.show({ model: "no-such-model" }), (e) => e.status_code === 404);
console.log("ok: errors raise with their status");

await ollama.delete({ model: "npm-made" });
await ollama.delete({ model: "npm-streamed" });
const final = await ollama.list();
assert.ok(!final.models.some((m) => m.name.startsWith("npm-")));
console.log("ok: ollama.delete()");
