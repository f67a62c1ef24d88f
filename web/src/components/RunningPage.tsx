import { useState } from 'preact/hooks';
import { api, ApiError } from '../api/client';
import type { RunningModel } from '../api/types';
import { formatBytes, relativeTime } from '../lib/format';
import { usePoll } from '../lib/poll';

function processor(m: RunningModel): string {
  if (!m.size) return '–';
  const gpu = Math.round((m.size_vram / m.size) * 100);
  if (gpu >= 100) return '100% GPU';
  if (gpu <= 0) return '100% CPU';
  return `${100 - gpu}%/${gpu}% CPU/GPU`;
}

export function RunningPage() {
  const [list, setList] = useState<RunningModel[] | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState<string>('');
  const load = async () => {
    try {
      setList(await api.ps());
      setError('');
    } catch (e) {
      setError(e instanceof ApiError || e instanceof Error ? e.message : String(e));
    }
  };
  usePoll(load, 2000);
  const unload = async (name: string) => {
    setBusy(name);
    try {
      await api.unload(name);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
    setBusy('');
    await load();
  };
  return (
    <div class="stack gap">
      <h1>Running models</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {list && list.length === 0 && <p class="muted">No model is loaded. Models load when a chat uses them.</p>}
      <ul class="models">
        {(list ?? []).map((m) => (
          <li class="card model" aria-label={m.name} key={m.name}>
            <div class="model-main">
              <div>
                <div class="model-name">{m.name}</div>
                <div class="muted">
                  {formatBytes(m.size)} · {processor(m)}
                  {m.context_length ? ` · context ${m.context_length}` : ''} · unloads{' '}
                  {relativeTime(m.expires_at)}
                </div>
              </div>
              <button class="small" disabled={busy === m.name} onClick={() => void unload(m.name)}>
                Unload
              </button>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}
