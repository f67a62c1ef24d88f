import { useState } from 'preact/hooks';
import { versionCount } from '../lib/branches';
import { tokensPerSecond } from '../lib/chat';
import { formatNumber } from '../lib/format';
import type { StoredMessage } from '../lib/storage';
import { FileChips } from './Attachments';
import { copyText, Markdown } from './Markdown';

// ‹ 2 / 3 ›: which version of this message (and what followed it) is shown.
function Versions(props: { m: StoredMessage; busy: boolean; onSwitch: (k: number) => void }) {
  const n = versionCount(props.m);
  if (n < 2) return null;
  const k = props.m.fork!.active;
  return (
    <div class="versions" role="group" aria-label="Versions">
      <button class="icon small" aria-label="Previous version" disabled={props.busy || k === 0} onClick={() => props.onSwitch(k - 1)}>
        ‹
      </button>
      <span class="version-pos">
        <span aria-hidden="true">
          {k + 1} / {n}
        </span>
        <span class="sr-only">
          Version {k + 1} of {n}
        </span>
      </span>
      <button class="icon small" aria-label="Next version" disabled={props.busy || k === n - 1} onClick={() => props.onSwitch(k + 1)}>
        ›
      </button>
    </div>
  );
}

function Stats(props: { m: StoredMessage }) {
  const s = props.m.stats;
  if (!s) return null;
  const tps = tokensPerSecond(s);
  const parts: string[] = [];
  if (tps !== undefined) parts.push(`${formatNumber(tps)} tok/s`);
  if (s.evalCount !== undefined) parts.push(`${s.evalCount} tokens`);
  if (s.ttftMs !== undefined) parts.push(`first token ${Math.round(s.ttftMs)} ms`);
  if (s.promptEvalCount !== undefined) parts.push(`prompt ${s.promptEvalCount} tokens`);
  if (s.doneReason === 'length') parts.push('stopped at the length limit');
  if (!parts.length) return null;
  return <div class="stats">{parts.join(' · ')}</div>;
}

export function MessageView(props: {
  m: StoredMessage;
  live: boolean;
  canRegenerate: boolean;
  onRegenerate: () => void;
  onEdit: (text: string) => void;
  onSwitch: (version: number) => void;
  busy: boolean;
}) {
  const { m } = props;
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(m.content);
  const label = m.role === 'user' ? 'You' : m.role === 'assistant' ? m.model || 'Assistant' : m.role;

  return (
    <article class={`msg ${m.role}`} aria-label={`${m.role === 'user' ? 'Your message' : 'Reply'}`}>
      <header class="msg-head">
        <span class="who">{label}</span>
      </header>
      {m.thinking && (
        <details class="thinking">
          <summary>{props.live && !m.content ? 'Thinking…' : 'Thoughts'}</summary>
          <div class="thinking-text">{m.thinking}</div>
        </details>
      )}
      {editing ? (
        <form
          class="edit"
          onSubmit={(e) => {
            e.preventDefault();
            if (!draft.trim() && !m.files?.length && !m.images?.length) return;
            setEditing(false);
            props.onEdit(draft);
          }}
        >
          <textarea
            aria-label="Edit message"
            value={draft}
            rows={Math.min(10, draft.split('\n').length + 1)}
            onInput={(e) => setDraft(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Escape') setEditing(false);
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
            autoFocus
          />
          <div class="row end">
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <button class="primary" type="submit" disabled={props.busy}>
              Save &amp; send
            </button>
          </div>
        </form>
      ) : m.role === 'assistant' ? (
        <Markdown text={m.content} />
      ) : (
        m.content && <div class="plain">{m.content}</div>
      )}
      {m.files?.length ? <FileChips files={m.files} /> : null}
      {m.images?.length ? (
        <div class="images">
          {m.images.map((b64, i) => (
            <img src={`data:image/*;base64,${b64}`} alt={`attached image ${i + 1}`} />
          ))}
        </div>
      ) : null}
      {m.tool_calls?.length ? (
        <div class="tools" aria-label="Tool calls">
          {m.tool_calls.map((t) => (
            <div class="tool">
              <span class="tool-name">Tool call: {t.function.name}</span>
              <pre>{JSON.stringify(t.function.arguments, null, 2)}</pre>
            </div>
          ))}
        </div>
      ) : null}
      {props.live && !m.content && !m.thinking && !m.tool_calls?.length && (
        <div class="muted typing" role="status">
          Waiting for the first token…
        </div>
      )}
      {m.error && (
        <p class="error" role="alert">
          {m.error}
        </p>
      )}
      {m.stopped && <p class="muted">Stopped.</p>}
      <Stats m={m} />
      {!editing && !props.live && (
        <div class="actions">
          <button class="small" onClick={() => void copyText(m.content)} aria-label="Copy message">
            Copy
          </button>
          {m.role === 'user' && (
            <button
              class="small"
              disabled={props.busy}
              onClick={() => {
                setDraft(m.content);
                setEditing(true);
              }}
            >
              Edit
            </button>
          )}
          {props.canRegenerate && (
            <button class="small" disabled={props.busy} onClick={props.onRegenerate}>
              Regenerate
            </button>
          )}
          <Versions m={m} busy={props.busy} onSwitch={props.onSwitch} />
        </div>
      )}
    </article>
  );
}
