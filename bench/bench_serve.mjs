#!/usr/bin/env node
// Serving overhead: the real `vkllm serve` on loopback against the engine alone (`vkllm bench`)
// on the same model. Prints time to first token through HTTP vs the engine's prefill of the same
// number of prompt tokens, aggregate decode tok/s through HTTP at B concurrent streams vs the
// engine's batch-B decode, and CPU time per engine step: the whole server process against the
// whole `vkllm bench` process, and the server's engine thread (scheduling, sampling, recording and
// submitting a step) against the bench's thread that records and submits the same steps.
// Engine and HTTP measurements alternate (the server idles while `vkllm bench` runs), so that a
// shared machine's changing load hits both sides alike; times are the best of the repetitions.
// Usage: node bench/bench_serve.mjs --vkllm build/server/vkllm --model FILE.gguf
//          [--batch 1,8,32,64] [--gen 64] [--words 60] [--reps 5] [--json]
import {spawn, execFileSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const args = {vkllm: 'build/server/vkllm', model: '', batch: '1,8,32,64', gen: '64', words: '60',
  reps: '5', json: false};
for (let i = 2; i < process.argv.length; ++i) {
  const k = process.argv[i].replace(/^--/, '');
  if (k === 'json') args.json = true;
  else args[k] = process.argv[++i];
}
if (!args.model) throw new Error('--model FILE.gguf is required');
const batches = args.batch.split(',').map(Number);
const gen = Number(args.gen);
const reps = Number(args.reps);
const log = (...a) => console.error(...a);

// --- the server ---------------------------------------------------------------------------------
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vkllm-bench-serve-'));
fs.mkdirSync(path.join(tmp, 'models'));
const server = spawn(args.vkllm, ['serve'], {
  env: {...process.env, OLLAMA_MODELS: path.join(tmp, 'models'), OLLAMA_HOST: '127.0.0.1:0',
    HOME: tmp, OLLAMA_NUM_PARALLEL: String(Math.max(...batches)), OLLAMA_KEEP_ALIVE: '-1'},
  stdio: ['ignore', 'ignore', 'pipe']});
let serverLog = '';
const port = await new Promise((resolve, reject) => {
  server.stderr.on('data', (d) => {
    serverLog += d;
    const m = /Listening on [^ ]*:(\d+)/.exec(serverLog);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', (c) => reject(new Error(`vkllm serve exited (${c}): ${serverLog}`)));
});
const cleanup = () => {
  server.kill('SIGTERM');
  fs.rmSync(tmp, {recursive: true, force: true});
};
process.on('exit', cleanup);

// A connection per request: the server closes idle keep-alive connections while `vkllm bench`
// runs, and a request on one of those would fail (loopback connects cost microseconds).
const agent = new http.Agent({keepAlive: false, maxSockets: 1024});
// POST (or GET when body is null); calls onLine(json, msSinceStart) per NDJSON line; resolves to
// {status, objects}.
function call(pathName, body, onLine) {
  return new Promise((resolve, reject) => {
    const payload = body === null ? null : (Buffer.isBuffer(body) ? body : JSON.stringify(body));
    const t0 = performance.now();
    // A Content-Length body (not chunked): one write, no Nagle/delayed-ACK stall in the timings.
    const headers = payload === null ? {} : {'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload)};
    const req = http.request({host: '127.0.0.1', port, path: pathName, agent, headers,
      method: payload === null ? 'GET' : 'POST'}, (res) => {
      let buf = '';
      const objects = [];
      res.setEncoding('utf8');
      const line = (l) => {
        if (!l.trim()) return;
        let o;
        try { o = JSON.parse(l); } catch { o = l; }
        objects.push(o);
        onLine?.(o, performance.now() - t0);
      };
      res.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          line(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
      res.on('end', () => {
        line(buf);
        resolve({status: res.statusCode, objects, text: objects.join('\n')});
      });
    });
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}
async function metrics() {
  const r = await call('/metrics', null);
  const sum = (name) => r.objects.filter((l) => typeof l === 'string' && l.startsWith(name))
    .reduce((s, l) => s + Number(l.split(' ').at(-1)), 0);
  return {steps: sum('vkllm_steps_total'), stepTokens: sum('vkllm_step_tokens_sum')};
}
// CPU seconds of the server so far, per thread name: /proc/PID/task/*/schedstat counts on-CPU
// nanoseconds (stat's clock ticks are 10 ms, too coarse for a thread that works 0.2 ms a step).
function threadCpu() {
  const out = {};
  for (const tid of fs.readdirSync(`/proc/${server.pid}/task`)) {
    let comm;
    let ns;
    try {
      comm = fs.readFileSync(`/proc/${server.pid}/task/${tid}/comm`, 'utf8').trim();
      ns = Number(fs.readFileSync(`/proc/${server.pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      continue;  // the thread has just exited
    }
    const name = comm.replace(/[-:]?\d+$/, '');
    out[name] = (out[name] ?? 0) + ns / 1e9;
  }
  return out;
}
function processCpu() {
  const f = fs.readFileSync(`/proc/${server.pid}/stat`, 'utf8');
  const s = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(s[11]) + Number(s[12])) / 100;
}

// Model from the fixture GGUF, as a user would create it.
const blob = fs.readFileSync(args.model);
const digest = 'sha256:' + createHash('sha256').update(blob).digest('hex');
await call(`/api/blobs/${digest}`, blob);
const created = await call('/api/create', {model: 'bench', files: {'m.gguf': digest},
  template: '{{ .Prompt }}', stream: false});
if (created.status !== 200) throw new Error(`create: ${created.text}`);

let seq = 0;
const words = (n) => Array.from({length: n}, () => `w${(seq++ * 7919) % 100003}`).join(' ');
// One streaming generate; resolves to {ttft, chunks: [ms...], final}.
async function stream(prompt, numPredict) {
  const chunks = [];
  const t0 = performance.now();
  const r = await call('/api/generate', {model: 'bench', prompt, raw: true, stream: true,
    options: {temperature: 0, num_predict: numPredict}}, (o, ms) => {
    if (typeof o === 'object' && !o.error && (o.response !== '' || !o.done)) chunks.push(t0 + ms);
  });
  const final = r.objects.at(-1);
  if (r.status !== 200 || final?.error) throw new Error(`generate: ${r.text.slice(0, 300)}`);
  return {chunks, final, t0};
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

// Warm-up: loads the model and creates every pipeline the measured requests use.
await stream(words(8), 4);
await Promise.all(Array.from({length: Math.max(...batches)}, () => stream(words(4), 4)));

const engineRun = (extra) => JSON.parse(execFileSync(args.vkllm,
  ['bench', '--model', args.model, '--json', ...extra],
  {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}));

// --- time to first token -------------------------------------------------------------------------
// Distinct prompts each time, so the prefix cache never turns a prefill into a lookup.
const ttft = [];
const prefillMs = [];
const promptTokens = [];
for (let i = 0; i < reps; ++i) {
  const r = await stream(words(Number(args.words)), 1);
  ttft.push(r.chunks[0] - r.t0);
  prefillMs.push(r.final.prompt_eval_duration / 1e6);
  promptTokens.push(r.final.prompt_eval_count);
}
const nPrompt = median(promptTokens);
// The engine alone: a fresh process's second request (the first creates pipelines), same length.
const engineTtftRuns = [];
let device = '';
for (let i = 0; i < Math.max(2, Math.ceil(reps / 2)); ++i) {
  const cold = engineRun(['--cold', '--prompt', String(nPrompt)]);
  engineTtftRuns.push(cold.second_request_ttft_seconds * 1000);
  device = cold.device ?? device;
  const r = await stream(words(Number(args.words)), 1);
  ttft.push(r.chunks[0] - r.t0);
  prefillMs.push(r.final.prompt_eval_duration / 1e6);
}

// --- aggregate decode through HTTP -----------------------------------------------------------------
const serve = [];
const engineDecode = [];
for (const b of batches) {
  engineDecode.push(engineRun(['--batch', String(b), '--prompt', '16', '--gen', String(gen)])
    .decode[0]);
  const starts = [];
  let cpuA;
  let metA;
  let threadsA;
  let armed = 0;
  // The steady window: from the moment every stream has its first token to the moment the first
  // one finishes. Tokens in it are pure decode steps of all B sequences.
  const runs = await Promise.all(Array.from({length: b}, async () => {
    const chunks = [];
    const t0 = performance.now();
    starts.push(t0);
    let first = true;
    const r = await call('/api/generate', {model: 'bench', prompt: words(4), raw: true,
      stream: true, options: {temperature: 0, num_predict: gen}}, async (o, ms) => {
      if (typeof o !== 'object' || o.error) return;
      chunks.push(t0 + ms);
      if (first) {
        first = false;
        if (++armed === b) {
          cpuA = processCpu();
          threadsA = threadCpu();
          metA = metrics();
        }
      }
    });
    const final = r.objects.at(-1);
    if (r.status !== 200 || final?.error) throw new Error(`generate: ${r.text.slice(0, 300)}`);
    return {chunks, final, t0};
  }));
  // CPU and steps were sampled when the last stream started; sample again now that all are done
  // and count only whole steps in between (the tail where streams end one by one is included).
  const cpuB = processCpu();
  const threadsB = threadCpu();
  const metB = await metrics();
  const ma = await metA;
  const tA = Math.max(...runs.map((r) => r.chunks[0]));
  const tB = Math.min(...runs.map((r) => r.chunks.at(-1)));
  const inWindow = runs.reduce((s, r) => s + r.chunks.filter((t) => t > tA && t <= tB).length, 0);
  const generated = runs.reduce((s, r) => s + r.final.eval_count, 0);
  const wall = (Math.max(...runs.map((r) => r.chunks.at(-1))) - Math.min(...starts)) / 1000;
  const steps = metB.steps - ma.steps;
  const threads = {};
  for (const [k, v] of Object.entries(threadsB)) threads[k] = 1000 * (v - (threadsA[k] ?? 0)) / steps;
  const engineThread = threads['vkllm-engine'] ?? NaN;
  serve.push({batch: b, steady_tok_per_s: tB > tA ? inWindow / ((tB - tA) / 1000) : 0,
    end_to_end_tok_per_s: generated / wall, generated, steps,
    cpu_ms_per_step: 1000 * (cpuB - cpuA) / steps, engine_thread_cpu_ms_per_step: engineThread,
    thread_cpu_ms_per_step: threads});
}
cleanup();
process.removeListener('exit', cleanup);

const engineTtft = Math.min(...engineTtftRuns);

const result = {
  model: args.model, device, prompt_tokens: nPrompt, gen_per_stream: gen,
  ttft_ms: {http_min: Math.min(...ttft), http_median: median(ttft),
    server_prompt_eval_min: Math.min(...prefillMs), engine_min: engineTtft,
    engine_median: median(engineTtftRuns), overhead_min: Math.min(...ttft) - engineTtft},
  decode: batches.map((b, i) => {
    const e = engineDecode[i];
    return {...serve[i], engine_tok_per_s: e.tok_per_s, bench_cpu_ms_per_step: e.cpu_ms_per_step,
      bench_thread_cpu_ms_per_step: e.thread_cpu_ms_per_step, engine_ms_per_step: e.ms_per_step,
      engine_gpu_ms_per_step: e.gpu_ms_per_step ?? null,
      http_over_engine: serve[i].steady_tok_per_s / e.tok_per_s};
  }),
};
if (args.json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const f = (x, d = 2) => x.toFixed(d);
  console.log(`${result.model} on ${result.device}, prompt ${nPrompt} tokens, ${gen} generated per stream`);
  const t = result.ttft_ms;
  console.log(`time to first token (best of ${ttft.length}): HTTP ${f(t.http_min)} ms (median ` +
    `${f(t.http_median)}; server-side prefill ${f(t.server_prompt_eval_min)}), engine ` +
    `${f(t.engine_min)} ms (median ${f(t.engine_median)}): ${t.overhead_min >= 0 ? '+' : ''}` +
    `${f(t.overhead_min)} ms through HTTP`);
  for (const d of result.decode) {
    console.log(`batch ${String(d.batch).padStart(3)}: HTTP ${f(d.steady_tok_per_s, 1)} tok/s ` +
      `(end to end ${f(d.end_to_end_tok_per_s, 1)}), engine ${f(d.engine_tok_per_s, 1)} tok/s: ` +
      `${f(100 * d.http_over_engine, 1)}%; CPU ms/step: process ${f(d.cpu_ms_per_step)} vs ` +
      `${f(d.bench_cpu_ms_per_step)}, engine thread ${f(d.engine_thread_cpu_ms_per_step)} vs ` +
      `${f(d.bench_thread_cpu_ms_per_step)}`);
  }
}
