import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from '../api/client';
import type { ShowResponse, TagModel } from '../api/types';
import { formatBytes } from '../lib/format';
import { modelfileToRequest } from '../lib/modelfile';
import { useStore } from '../lib/store';
import { createChat } from '../state/chats';
import { confirmDialog } from '../state/dialog';
import { models, modelsError, modelsLoaded, refreshModels } from '../state/models';
import { navigate } from '../state/route';
import { PullBox } from './PullBox';

const describe = (e: unknown) => (e instanceof ApiError || e instanceof Error ? e.message : String(e));

function CreateForm() {
  const [name, setName] = useState('');
  const [text, setText] = useState('FROM \nSYSTEM """"""\nPARAMETER temperature 0.7\n');
  const [log, setLog] = useState<string[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const create = async () => {
    setError('');
    setLog([]);
    let req;
    try {
      req = modelfileToRequest(name.trim(), text);
    } catch (e) {
      setError(describe(e));
      return;
    }
    setBusy(true);
    try {
      for await (const line of api.create(req)) if (line.status) setLog((l) => [...l, line.status!]);
      await refreshModels();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <details class="card">
      <summary>Create a model from a Modelfile</summary>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label class="stack">
          New model name
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="my-assistant" />
        </label>
        <label class="stack">
          Modelfile
          <textarea class="mono" rows={8} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <div class="row end">
          <button class="primary" type="submit" disabled={busy || !name.trim()}>
            Create
          </button>
        </div>
      </form>
      {log.length > 0 && (
        <pre class="log" aria-live="polite">
          {log.join('\n')}
        </pre>
      )}
      {error && (
        <p class="error" role="alert">
          Create failed: {error}
        </p>
      )}
    </details>
  );
}

function Details(props: { name: string }) {
  const [info, setInfo] = useState<ShowResponse | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api.show(props.name).then(setInfo, (e: unknown) => setError(describe(e)));
  }, [props.name]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!info) return <p class="muted">Loading…</p>;
  const mi = info.model_info ?? {};
  const arch = String(mi['general.architecture'] ?? '');
  const facts: [string, unknown][] = [
    ['Architecture', arch],
    ['Parameters', mi['general.parameter_count']],
    ['Context length', mi[`${arch}.context_length`]],
    ['Embedding length', mi[`${arch}.embedding_length`]],
    ['Layers', mi[`${arch}.block_count`]],
    ['Quantization', info.details?.quantization_level],
    ['Capabilities', info.capabilities?.join(', ')],
  ];
  return (
    <div class="details">
      <dl>
        {facts
          .filter(([, v]) => v !== undefined && v !== '')
          .map(([k, v]) => (
            <>
              <dt>{k}</dt>
              <dd>{String(v)}</dd>
            </>
          ))}
      </dl>
      {info.system && (
        <>
          <h4>System</h4>
          <pre>{info.system}</pre>
        </>
      )}
      {info.parameters && (
        <>
          <h4>Parameters</h4>
          <pre>{info.parameters}</pre>
        </>
      )}
      {info.template && (
        <>
          <h4>Template</h4>
          <pre>{info.template}</pre>
        </>
      )}
      {info.license && (
        <details>
          <summary>License</summary>
          <pre>{info.license}</pre>
        </details>
      )}
    </div>
  );
}

function ModelRow(props: { m: TagModel }) {
  const { m } = props;
  const [open, setOpen] = useState(false);
  const [copying, setCopying] = useState(false);
  const [dest, setDest] = useState('');
  const [error, setError] = useState('');
  const d = m.details ?? {};
  const remove = async () => {
    if (!(await confirmDialog(`Delete the model ${m.name}? Its files are removed from disk.`))) return;
    setError('');
    try {
      await api.remove(m.name);
    } catch (e) {
      setError(describe(e));
    }
    await refreshModels();
  };
  const copy = async () => {
    setError('');
    try {
      await api.copy(m.name, dest.trim());
      setCopying(false);
      setDest('');
      await refreshModels();
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <li class="model card" aria-label={m.name}>
      <div class="model-main">
        <div>
          <div class="model-name">{m.name}</div>
          <div class="muted">
            {[formatBytes(m.size), d.family, d.parameter_size, d.quantization_level].filter(Boolean).join(' · ')}
          </div>
          <div class="caps">
            {(m.capabilities ?? []).map((c) => (
              <span class="tag">{c}</span>
            ))}
          </div>
        </div>
        <div class="row wrap">
          <button
            class="small"
            onClick={async () => {
              const c = await createChat(m.name);
              navigate({ page: 'chat', id: c.id });
            }}
          >
            Chat
          </button>
          <button class="small" aria-expanded={open} onClick={() => setOpen(!open)}>
            Details
          </button>
          <button class="small" onClick={() => setCopying(!copying)}>
            Copy
          </button>
          <button class="small danger" onClick={() => void remove()}>
            Delete
          </button>
        </div>
      </div>
      {copying && (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void copy();
          }}
        >
          <input
            class="grow"
            aria-label={`Copy ${m.name} as`}
            placeholder="new name"
            value={dest}
            onInput={(e) => setDest(e.currentTarget.value)}
            autoFocus
          />
          <button class="primary small" type="submit" disabled={!dest.trim()}>
            Copy
          </button>
        </form>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {open && <Details name={m.name} />}
    </li>
  );
}

export function ModelsPage() {
  const list = useStore(models);
  const error = useStore(modelsError);
  const loaded = useStore(modelsLoaded);
  const total = list.reduce((s, m) => s + m.size, 0);
  return (
    <div class="stack gap">
      <h1>Models</h1>
      <section aria-labelledby="pull-h">
        <h2 id="pull-h">Pull a model</h2>
        <PullBox />
      </section>
      <CreateForm />
      <section aria-labelledby="installed-h">
        <div class="row">
          <h2 id="installed-h" class="grow">
            Installed {loaded && <span class="muted">({list.length}, {formatBytes(total)})</span>}
          </h2>
          <button class="small" onClick={() => void refreshModels()}>
            Refresh
          </button>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {loaded && list.length === 0 && !error && <p class="muted">No models installed.</p>}
        <ul class="models">
          {list.map((m) => (
            <ModelRow key={m.digest + m.name} m={m} />
          ))}
        </ul>
      </section>
    </div>
  );
}
