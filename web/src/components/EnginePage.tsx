import { useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api/client';
import { derive, modelsIn, type EnginePoint, type Scrape } from '../lib/engine_metrics';
import { formatNumber } from '../lib/format';
import { usePoll } from '../lib/poll';
import { parsePrometheus } from '../lib/prometheus';
import { Chart } from './Chart';

const WINDOW = 300; // points kept: five minutes at one scrape a second

type Field = Exclude<keyof EnginePoint, 't'>;
function column(points: EnginePoint[], f: Field, scale = 1): (number | null)[] {
  return points.map((p) => (p[f] === undefined ? null : p[f]! * scale));
}

export function EnginePage() {
  const [points, setPoints] = useState<EnginePoint[]>([]);
  const [names, setNames] = useState<string[]>([]);
  const [model, setModel] = useState('');
  const [error, setError] = useState('');
  const [empty, setEmpty] = useState(false);
  const prev = useRef<Scrape | undefined>(undefined);

  usePoll(
    async () => {
      try {
        const { samples } = parsePrometheus(await api.metrics());
        const cur: Scrape = { t: Date.now() / 1000, samples };
        const p = derive(prev.current, cur, model);
        prev.current = cur;
        setNames(modelsIn(samples));
        setEmpty(!samples.some((s) => s.name.startsWith('vkllm_')));
        setPoints((list) => [...list.slice(-(WINDOW - 1)), p]);
        setError('');
      } catch (e) {
        const msg = e instanceof ApiError && e.status === 404 ? 'this server has no /metrics' : String((e as Error).message ?? e);
        setError(msg);
      }
    },
    1000,
    [model],
  );

  // Interval values (rates, histogram means) only exist when something happened in the last
  // second; the figures keep the latest one seen so a quiet second does not blank them.
  const latest = (f: Field) => {
    for (let i = points.length - 1; i >= 0; i--) if (points[i]![f] !== undefined) return points[i]![f];
    return undefined;
  };
  const t = points.map((p) => p.t);
  const hit = latest('prefixHitRate');
  const ttft = latest('ttftMean');
  const figures: [string, string][] = [
    ['Generated tok/s', formatNumber(latest('tokPerSec'))],
    ['Prompt tok/s', formatNumber(latest('promptTokPerSec'))],
    ['Running', formatNumber(latest('running'), 0)],
    ['Queued', formatNumber(latest('queued'), 0)],
    ['Tokens per step', formatNumber(latest('stepTokens'))],
    ['Prefix-cache hits', hit === undefined ? '–' : `${formatNumber(hit * 100, 0)}%`],
    ['First token (mean)', ttft === undefined ? '–' : `${formatNumber(ttft * 1000, 0)} ms`],
  ];

  return (
    <div class="stack gap">
      <div class="row">
        <h1 class="grow">Engine</h1>
        <label class="inline">
          Model{' '}
          <select
            value={model}
            onChange={(e) => {
              setModel(e.currentTarget.value);
              setPoints([]);
              prev.current = undefined;
            }}
          >
            <option value="">All models</option>
            {names.map((n) => (
              <option value={n}>{n}</option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p class="error" role="alert">
          Metrics: {error}
        </p>
      )}
      {empty && !error && <p class="muted">The server reports no engine metrics yet.</p>}
      <dl class="figures" aria-live="off">
        {figures.map(([k, v]) => (
          <div class="figure" data-metric={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <div class="charts">
        <Chart
          title="Tokens per second"
          series={[
            { label: 'generated', color: '#ea580c' },
            { label: 'prompt', color: '#2563eb' },
          ]}
          data={[t, column(points, 'tokPerSec'), column(points, 'promptTokPerSec')]}
        />
        <Chart
          title="Sequences"
          series={[
            { label: 'running', color: '#16a34a' },
            { label: 'queued', color: '#dc2626' },
          ]}
          data={[t, column(points, 'running'), column(points, 'queued')]}
        />
        <Chart
          title="Tokens per step"
          series={[{ label: 'tokens/step', color: '#9333ea' }]}
          data={[t, column(points, 'stepTokens')]}
        />
        <Chart
          title="KV blocks"
          series={[
            { label: 'used', color: '#ea580c' },
            { label: 'cached', color: '#0891b2' },
            { label: 'free', color: '#65a30d' },
          ]}
          data={[t, column(points, 'kvUsed'), column(points, 'kvCached'), column(points, 'kvFree')]}
        />
        <Chart
          title="Prefix-cache hit rate"
          unit="%"
          series={[{ label: 'hit rate', color: '#0891b2' }]}
          data={[t, column(points, 'prefixHitRate', 100)]}
        />
        <Chart
          title="Time to first token"
          unit=" ms"
          series={[
            { label: 'mean', color: '#2563eb' },
            { label: 'p90', color: '#dc2626' },
          ]}
          data={[t, column(points, 'ttftMean', 1000), column(points, 'ttftP90', 1000)]}
        />
      </div>
    </div>
  );
}
