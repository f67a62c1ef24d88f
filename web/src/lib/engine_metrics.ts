// From two successive /metrics scrapes to the numbers the engine view charts. Counters become
// rates over the interval, histograms become the interval's mean (and p90 for time to first
// token), gauges are read as they are. Series are summed over models unless one is chosen.
import type { Sample } from './prometheus';

export interface Scrape {
  t: number; // seconds
  samples: Sample[];
}

export interface EnginePoint {
  t: number;
  tokPerSec?: number;
  promptTokPerSec?: number;
  running?: number;
  queued?: number;
  stepTokens?: number;
  kvUsed?: number;
  kvFree?: number;
  kvCached?: number;
  prefixHitRate?: number; // 0..1 of prompt tokens served from the prefix cache
  ttftMean?: number; // seconds
  ttftP90?: number; // seconds
}

type Filter = Record<string, string>;

function matches(s: Sample, name: string, filter: Filter): boolean {
  if (s.name !== name) return false;
  for (const [k, v] of Object.entries(filter)) if (s.labels[k] !== v) return false;
  return true;
}

// Sum of every sample of `name` that matches; undefined when there is none.
export function total(samples: Sample[], name: string, filter: Filter = {}): number | undefined {
  let sum: number | undefined;
  for (const s of samples)
    if (matches(s, name, filter) && Number.isFinite(s.value)) sum = (sum ?? 0) + s.value;
  return sum;
}

// Increase of a counter between scrapes; a restart (counter went down) counts from zero.
function increase(prev: Sample[], cur: Sample[], name: string, filter: Filter): number | undefined {
  const b = total(cur, name, filter);
  if (b === undefined) return undefined;
  const a = total(prev, name, filter) ?? 0;
  return b >= a ? b - a : b;
}

export function modelsIn(samples: Sample[]): string[] {
  const names = new Set<string>();
  for (const s of samples) if (s.name.startsWith('vkllm_') && s.labels.model) names.add(s.labels.model);
  return [...names].sort();
}

// Quantile from cumulative bucket increases (linear inside the bucket, as Prometheus does).
export function histogramQuantile(
  q: number,
  prev: Sample[],
  cur: Sample[],
  name: string,
  filter: Filter,
): number | undefined {
  const bounds = new Map<number, number>();
  for (const s of cur) {
    if (!matches(s, `${name}_bucket`, filter) || s.labels.le === undefined) continue;
    const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
    if (!bounds.has(le)) bounds.set(le, increase(prev, cur, `${name}_bucket`, { ...filter, le: s.labels.le }) ?? 0);
  }
  const buckets = [...bounds.entries()].sort((a, b) => a[0] - b[0]);
  const count = buckets.at(-1)?.[1] ?? 0;
  if (count <= 0) return undefined;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, c] of buckets) {
    if (c >= rank) {
      if (le === Infinity) return lowerBound;
      const inBucket = c - lowerCount;
      return inBucket > 0 ? lowerBound + ((le - lowerBound) * (rank - lowerCount)) / inBucket : le;
    }
    lowerBound = le;
    lowerCount = c;
  }
  return lowerBound;
}

function histogramMean(prev: Sample[], cur: Sample[], name: string, filter: Filter): number | undefined {
  const n = increase(prev, cur, `${name}_count`, filter);
  const s = increase(prev, cur, `${name}_sum`, filter);
  if (n === undefined || s === undefined || n <= 0) return undefined;
  return s / n;
}

export function derive(prev: Scrape | undefined, cur: Scrape, model = ''): EnginePoint {
  const f: Filter = model ? { model } : {};
  const p = prev?.samples ?? [];
  const c = cur.samples;
  const dt = prev ? cur.t - prev.t : 0;
  const rate = (name: string) => {
    if (!prev || dt <= 0) return undefined;
    const inc = increase(p, c, name, f);
    return inc === undefined ? undefined : inc / dt;
  };
  const point: EnginePoint = {
    t: cur.t,
    tokPerSec: rate('vkllm_generated_tokens_total'),
    promptTokPerSec: rate('vkllm_prompt_tokens_total'),
    running: total(c, 'vkllm_running_sequences', f),
    queued: total(c, 'vkllm_queued_requests', f),
    kvUsed: total(c, 'vkllm_kv_blocks', { ...f, state: 'used' }),
    kvFree: total(c, 'vkllm_kv_blocks', { ...f, state: 'free' }),
    kvCached: total(c, 'vkllm_kv_blocks', { ...f, state: 'cached' }),
  };
  // Tokens per step: a histogram (mean over the interval) or a plain gauge.
  point.stepTokens = c.some((s) => s.name === 'vkllm_step_tokens_count')
    ? prev
      ? histogramMean(p, c, 'vkllm_step_tokens', f)
      : undefined
    : total(c, 'vkllm_step_tokens', f);
  if (prev) {
    const hits = increase(p, c, 'vkllm_prefix_cache_hit_tokens_total', f);
    const prompt = increase(p, c, 'vkllm_prompt_tokens_total', f);
    if (hits !== undefined && prompt !== undefined && prompt > 0)
      point.prefixHitRate = Math.min(1, hits / prompt);
    point.ttftMean = histogramMean(p, c, 'vkllm_time_to_first_token_seconds', f);
    point.ttftP90 = histogramQuantile(0.9, p, c, 'vkllm_time_to_first_token_seconds', f);
  }
  return point;
}
