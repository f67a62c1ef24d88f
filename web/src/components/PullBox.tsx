import { useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api/client';
import { formatBytes } from '../lib/format';
import { foldProgress, type Layer } from '../lib/progress';
import { refreshModels } from '../state/models';

const describe = (e: unknown) => (e instanceof ApiError || e instanceof Error ? e.message : String(e));

function Progress(props: { status: string; layers: Layer[] }) {
  return (
    <div class="progress" aria-live="polite">
      <div class="status">{props.status}</div>
      {props.layers.map((l) => {
        const pct = l.total ? Math.floor((l.completed / l.total) * 100) : 0;
        return (
          <div class="layer" key={l.digest}>
            <span class="mono">{l.digest.replace('sha256:', '').slice(0, 12)}</span>
            <progress max={l.total} value={l.completed} aria-label={`layer ${l.digest.slice(7, 19)}`} />
            <span class="pct">
              {pct}% · {formatBytes(l.completed)} / {formatBytes(l.total)}
            </span>
          </div>
        );
      })}
    </div>
  );
}

// A model name to pull (editable; `suggestions` fill it in), per-layer progress, Cancel.
// Used by the models page and by the chat page when nothing is installed yet.
export function PullBox(props: { suggestions?: string[]; onPulled?: (model: string) => void }) {
  const [name, setName] = useState('');
  const [insecure, setInsecure] = useState(false);
  const [state, setState] = useState<{ status: string; layers: Layer[] }>({ status: '', layers: [] });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const ctrl = useRef<AbortController | null>(null);
  const input = useRef<HTMLInputElement>(null);

  const pull = async () => {
    const model = name.trim();
    if (!model) return;
    setBusy(true);
    setError('');
    let s = { status: 'starting…', layers: [] as Layer[] };
    setState(s);
    ctrl.current = new AbortController();
    try {
      for await (const line of api.pull(model, insecure, ctrl.current.signal)) {
        s = foldProgress(s, line);
        setState(s);
      }
      props.onPulled?.(model);
      await refreshModels();
    } catch (e) {
      if (ctrl.current.signal.aborted) setState({ ...s, status: 'Cancelled.' });
      else setError(describe(e));
    } finally {
      setBusy(false);
      ctrl.current = null;
    }
  };

  return (
    <div class="pull-box">
      {props.suggestions?.length ? (
        <div class="row wrap suggestions">
          <span class="muted">Try:</span>
          {props.suggestions.map((s) => (
            <button
              type="button"
              class="small"
              disabled={busy}
              onClick={() => {
                setName(s);
                input.current?.focus();
              }}
            >
              {s}
            </button>
          ))}
        </div>
      ) : null}
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          void pull();
        }}
      >
        <input
          ref={input}
          class="grow min12"
          aria-label="Model to pull"
          placeholder="e.g. llama3.2:1b or host:port/namespace/model:tag"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label class="check">
          <input type="checkbox" checked={insecure} onChange={(e) => setInsecure(e.currentTarget.checked)} />
          Insecure (http)
        </label>
        {busy ? (
          <button type="button" class="danger" onClick={() => ctrl.current?.abort()}>
            Cancel
          </button>
        ) : (
          <button class="primary" type="submit" disabled={!name.trim()}>
            Pull
          </button>
        )}
      </form>
      {(busy || state.status) && <Progress {...state} />}
      {error && (
        <p class="error" role="alert">
          Pull failed: {error}
        </p>
      )}
    </div>
  );
}
