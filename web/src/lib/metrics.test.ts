import { describe, expect, it } from 'vitest';
import { derive, histogramQuantile, modelsIn } from './engine_metrics';
import { parsePrometheus } from './prometheus';

const scrape1 = `# HELP vkllm_generated_tokens_total Tokens generated.
# TYPE vkllm_generated_tokens_total counter
vkllm_generated_tokens_total{model="a:latest"} 100
vkllm_generated_tokens_total{model="b:latest"} 50
vkllm_prompt_tokens_total{model="a:latest"} 1000
vkllm_prefix_cache_hit_tokens_total{model="a:latest"} 200
vkllm_running_sequences{model="a:latest"} 2
vkllm_queued_requests{model="a:latest"} 1
vkllm_kv_blocks{model="a:latest",state="used"} 10
vkllm_kv_blocks{model="a:latest",state="free"} 90
vkllm_kv_blocks{model="a:latest",state="cached"} 5
vkllm_step_tokens_sum{model="a:latest"} 100
vkllm_step_tokens_count{model="a:latest"} 10
vkllm_time_to_first_token_seconds_bucket{model="a:latest",le="0.1"} 1
vkllm_time_to_first_token_seconds_bucket{model="a:latest",le="0.5"} 2
vkllm_time_to_first_token_seconds_bucket{model="a:latest",le="+Inf"} 2
vkllm_time_to_first_token_seconds_sum{model="a:latest"} 0.4
vkllm_time_to_first_token_seconds_count{model="a:latest"} 2
process_open_fds 12
`;
const scrape2 = scrape1
  .replace('tokens_total{model="a:latest"} 100', 'tokens_total{model="a:latest"} 300')
  .replace('tokens_total{model="b:latest"} 50', 'tokens_total{model="b:latest"} 70')
  .replace('vkllm_prompt_tokens_total{model="a:latest"} 1000', 'vkllm_prompt_tokens_total{model="a:latest"} 1400')
  .replace('hit_tokens_total{model="a:latest"} 200', 'hit_tokens_total{model="a:latest"} 300')
  .replace('vkllm_step_tokens_sum{model="a:latest"} 100', 'vkllm_step_tokens_sum{model="a:latest"} 180')
  .replace('vkllm_step_tokens_count{model="a:latest"} 10', 'vkllm_step_tokens_count{model="a:latest"} 20')
  .replace('le="0.1"} 1', 'le="0.1"} 1')
  .replace('le="0.5"} 2', 'le="0.5"} 6')
  .replace('le="+Inf"} 2', 'le="+Inf"} 12')
  .replace('seconds_sum{model="a:latest"} 0.4', 'seconds_sum{model="a:latest"} 7.4')
  .replace('seconds_count{model="a:latest"} 2', 'seconds_count{model="a:latest"} 12');

describe('parsePrometheus', () => {
  it('reads names, labels (with escapes) and special values; skips junk lines', () => {
    const { samples, skipped } = parsePrometheus(
      'a_total 3\nb{x="q\\"uo\\\\te",y="n\\nl"} 1.5e3 1700000000\nc +Inf\nd NaN\n!!bad\ne{x="unterminated} 1\nf{x="1"}\n',
    );
    expect(samples.map((s) => s.name)).toEqual(['a_total', 'b', 'c', 'd']);
    expect(samples[1]).toEqual({ name: 'b', labels: { x: 'q"uo\\te', y: 'n\nl' }, value: 1500 });
    expect(samples[2]?.value).toBe(Infinity);
    expect(Number.isNaN(samples[3]?.value)).toBe(true);
    expect(skipped).toBe(3);
  });
});

describe('derive', () => {
  const s1 = { t: 100, samples: parsePrometheus(scrape1).samples };
  const s2 = { t: 102, samples: parsePrometheus(scrape2).samples };

  it('turns counters into rates and reads gauges, over all models', () => {
    const p = derive(s1, s2);
    expect(p.tokPerSec).toBeCloseTo((200 + 20) / 2);
    expect(p.promptTokPerSec).toBeCloseTo(200);
    expect(p.running).toBe(2);
    expect(p.queued).toBe(1);
    expect([p.kvUsed, p.kvFree, p.kvCached]).toEqual([10, 90, 5]);
    expect(p.stepTokens).toBeCloseTo(8); // (180-100)/(20-10)
    expect(p.prefixHitRate).toBeCloseTo(0.25); // 100 hits / 400 prompt tokens
    expect(p.ttftMean).toBeCloseTo(0.7); // 7 s over 10 requests
  });

  it('filters by model', () => {
    expect(derive(s1, s2, 'b:latest').tokPerSec).toBeCloseTo(10);
    expect(derive(s1, s2, 'b:latest').running).toBeUndefined();
    expect(modelsIn(s2.samples)).toEqual(['a:latest', 'b:latest']);
  });

  it('has no rates on the first scrape, and survives a server restart', () => {
    const first = derive(undefined, s1);
    expect(first.tokPerSec).toBeUndefined();
    expect(first.running).toBe(2);
    expect(first.stepTokens).toBeUndefined();
    // Counters went down: the server restarted, so the new value is the increase.
    const restarted = derive(s2, { t: 104, samples: parsePrometheus('vkllm_generated_tokens_total{model="a"} 10').samples });
    expect(restarted.tokPerSec).toBeCloseTo(5);
  });

  it('reads a gauge tokens-per-step', () => {
    const g = parsePrometheus('vkllm_step_tokens{model="a"} 17').samples;
    expect(derive(undefined, { t: 1, samples: g }).stepTokens).toBe(17);
  });
});

describe('histogramQuantile', () => {
  it('interpolates inside the bucket the rank falls in', () => {
    const a = parsePrometheus(scrape1).samples;
    const b = parsePrometheus(scrape2).samples;
    // Increases: le 0.1: 0, le 0.5: 4, +Inf: 10. p90 rank 9 lies in (0.5, +Inf] → lower bound.
    expect(histogramQuantile(0.9, a, b, 'vkllm_time_to_first_token_seconds', {})).toBe(0.5);
    // p20 rank 2 lies in (0.1, 0.5]: 0.1 + 0.4 * 2/4.
    expect(histogramQuantile(0.2, a, b, 'vkllm_time_to_first_token_seconds', {})).toBeCloseTo(0.3);
    expect(histogramQuantile(0.5, a, a, 'vkllm_time_to_first_token_seconds', {})).toBeUndefined();
  });
});
