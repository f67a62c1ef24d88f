// Load client for load.test.sh: CLIENTS concurrent users, each on its own keep-alive connection,
// each sending at least MIN requests, and more until SECONDS have passed, that cycle through /api/generate and /api/chat, streaming and
// stream:false, and streams it abandons after the first chunk. Every answer is checked to be
// complete and well-formed; prints one JSON line with counts and latencies.
// Usage: node load_client.mjs URL MODEL CLIENTS MIN SECONDS
import http from 'node:http';

const [url, model, clientsArg, minArg, secondsArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const minRequests = Number(minArg);
const deadline = performance.now() + 1000 * Number(secondsArg);
const base = new URL(url);

const kinds = ['generate-stream', 'chat-full', 'generate-abort', 'chat-stream', 'generate-full',
  'chat-abort'];

function body(kind, client, round) {
  const stream = !kind.endsWith('-full');
  const options = {num_predict: 2 + ((client + round) % 4), temperature: (client % 3) ? 0.8 : 0,
    seed: client};
  const text = `hi ${client}.${round}`;  // short: the load is in requests, not in prefill
  if (kind.startsWith('generate')) return {model, prompt: text, stream, options};
  return {model, messages: [{role: 'user', content: text}], stream, options};
}

// Checks one Ollama response object; returns an error text or null.
function checkChunk(kind, o, last) {
  if (typeof o !== 'object' || o === null) return 'not an object';
  if (o.error !== undefined) return `error: ${o.error}`;
  if (o.model === undefined || typeof o.done !== 'boolean') return 'missing model/done';
  if (kind.startsWith('generate') && typeof o.response !== 'string') return 'missing response';
  if (kind.startsWith('chat') && (typeof o.message?.content !== 'string' ||
      o.message.role !== 'assistant')) return 'missing message';
  if (last) {
    if (!o.done) return 'last chunk not done';
    if (!['stop', 'length'].includes(o.done_reason)) return `done_reason ${o.done_reason}`;
    for (const f of ['total_duration', 'eval_count', 'prompt_eval_count', 'eval_duration'])
      if (!Number.isInteger(o[f])) return `final chunk without ${f}`;
  } else if (o.done) {
    return 'done before the last chunk';
  }
  return null;
}

function request(agent, kind, client, round) {
  const path = kind.startsWith('generate') ? '/api/generate' : '/api/chat';
  const payload = JSON.stringify(body(kind, client, round));
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (error, extra = {}) => {
      if (settled) return;
      settled = true;
      resolve({kind, error, ms: performance.now() - started, ...extra});
    };
    const req = http.request({host: base.hostname, port: base.port, path, method: 'POST', agent,
      headers: {'content-type': 'application/json', 'content-length': Buffer.byteLength(payload)}},
    (res) => {
      if (res.statusCode !== 200) {
        let t = '';
        res.on('data', (d) => { t += d; });
        res.on('end', () => finish(`status ${res.statusCode}: ${t.slice(0, 200)}`));
        return;
      }
      let buf = '';
      const objects = [];
      let bad = null;
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (!line.trim()) continue;
          try { objects.push(JSON.parse(line)); } catch { bad = bad ?? `bad JSON line: ${line}`; }
        }
        if (kind.endsWith('-abort') && objects.length > 0 && !settled) {
          // The user walks away mid-stream: the server must free the sequence on its own.
          const err = bad ?? checkChunk(kind, objects[0], objects[0].done);
          req.destroy();
          finish(err, {aborted: true});
        }
      });
      res.on('end', () => {
        if (buf.trim()) {
          try { objects.push(JSON.parse(buf)); } catch { bad = bad ?? `bad JSON tail: ${buf}`; }
        }
        if (bad) return finish(bad);
        if (objects.length === 0) return finish('empty body');
        if (kind.endsWith('-full') && objects.length !== 1) return finish('stream:false sent chunks');
        for (let i = 0; i < objects.length; ++i) {
          const e = checkChunk(kind, objects[i], i === objects.length - 1);
          if (e) return finish(e);
        }
        finish(null, {tokens: objects.at(-1).eval_count});
      });
      res.on('error', (e) => finish(`response: ${e.message}`));
    });
    req.on('error', (e) => finish(settled ? null : `request: ${e.message}`));
    req.end(payload);
  });
}

async function user(client) {
  // One connection per user (as a browser tab or SDK client would hold); an aborted stream
  // closes it and the agent opens a new one.
  const agent = new http.Agent({keepAlive: true, maxSockets: 1});
  const results = [];
  let round = 0;
  do {
    results.push(await request(agent, kinds[(client + round) % kinds.length], client, round));
    ++round;
  } while (round < minRequests || performance.now() < deadline);
  agent.destroy();
  return results;
}

const t0 = performance.now();
const all = (await Promise.all(Array.from({length: clients}, (_, c) => user(c)))).flat();
const wall = (performance.now() - t0) / 1000;
const errors = all.filter((r) => r.error);
const complete = all.filter((r) => !r.error && !r.aborted).map((r) => r.ms).sort((a, b) => a - b);
const pct = (p) => complete.length ? complete[Math.min(complete.length - 1,
  Math.floor(p * complete.length))] : 0;
console.log(JSON.stringify({
  requests: all.length,
  errors: errors.length,
  aborted: all.filter((r) => r.aborted).length,
  tokens: all.reduce((s, r) => s + (r.tokens ?? 0), 0),
  wall_s: Number(wall.toFixed(2)),
  p50_ms: Math.round(pct(0.5)),
  p99_ms: Math.round(pct(0.99)),
  first_errors: [...new Set(errors.map((e) => `${e.kind}: ${e.error}`))].slice(0, 5),
}));
