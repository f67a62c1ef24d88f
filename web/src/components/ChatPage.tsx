import { useEffect, useRef, useState } from 'preact/hooks';
import type { Options } from '../api/types';
import { optionKeys } from '../lib/chat';
import { newId, type Conversation, type StoredMessage } from '../lib/storage';
import { useStore } from '../lib/store';
import { chats, chatsLoaded, createChat, runReply, saveChat, stopReply, streaming } from '../state/chats';
import { capabilitiesOf, models, modelsError } from '../state/models';
import { href, navigate } from '../state/route';
import { MessageView } from './MessageView';
import { Sidebar } from './Sidebar';

const optionLabels: Record<keyof Options, string> = {
  temperature: 'Temperature',
  top_p: 'Top P',
  top_k: 'Top K',
  min_p: 'Min P',
  repeat_penalty: 'Repeat penalty',
  num_ctx: 'Context (num_ctx)',
  num_predict: 'Max tokens (num_predict)',
  seed: 'Seed',
};
const integerOptions = new Set<keyof Options>(['top_k', 'num_ctx', 'num_predict', 'seed']);

function readImage(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error ?? new Error('cannot read the file'));
    r.readAsDataURL(file);
  });
}

function ConversationSettings(props: { c: Conversation; onChange: (c: Conversation) => void }) {
  const { c } = props;
  return (
    <div class="conv-settings">
      <label class="stack">
        System prompt
        <textarea
          rows={3}
          value={c.system}
          placeholder="Leave empty to use the model's own"
          onChange={(e) => props.onChange({ ...c, system: e.currentTarget.value })}
        />
      </label>
      <div class="grid">
        {optionKeys.map((k) => (
          <label class="stack" key={k}>
            {optionLabels[k]}
            <input
              type="number"
              step={integerOptions.has(k) ? 1 : 'any'}
              placeholder="model default"
              value={c.options[k] ?? ''}
              onChange={(e) => {
                const v = e.currentTarget.value;
                const options = { ...c.options };
                if (v === '') delete options[k];
                else options[k] = Number(v);
                props.onChange({ ...c, options });
              }}
            />
          </label>
        ))}
        <label class="check">
          <input
            type="checkbox"
            checked={c.format === 'json'}
            onChange={(e) => props.onChange({ ...c, format: e.currentTarget.checked ? 'json' : '' })}
          />
          Reply in JSON (format: json)
        </label>
      </div>
    </div>
  );
}

function ChatView(props: { c: Conversation }) {
  const { c } = props;
  const modelList = useStore(models);
  const modelsErr = useStore(modelsError);
  const live = useStore(streaming).has(c.id);
  const [text, setText] = useState('');
  const [images, setImages] = useState<string[]>([]);
  const [showSettings, setShowSettings] = useState(false);
  const listRef = useRef<HTMLDivElement>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);
  const caps = capabilitiesOf(c.model);
  const update = (next: Conversation) => void saveChat({ ...next, updatedAt: c.updatedAt });

  // A conversation without a model takes the first installed one.
  useEffect(() => {
    if (!c.model && modelList[0]) update({ ...c, model: modelList[0].name });
  }, [c.id, c.model, modelList]);
  // Follow the stream unless the user scrolled up to read.
  useEffect(() => {
    const el = listRef.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [c.messages]);
  useEffect(() => inputRef.current?.focus(), [c.id]);

  const send = () => {
    const t = text.trim();
    if ((!t && !images.length) || live || !c.model) return;
    const msg: StoredMessage = { id: newId(), role: 'user', content: t };
    if (images.length) msg.images = images;
    setText('');
    setImages([]);
    stick.current = true;
    void runReply(c, [...c.messages, msg]);
  };
  const lastAssistant = c.messages.map((m) => m.role).lastIndexOf('assistant');

  return (
    <main id="main" class="chat" tabIndex={-1}>
      <h1 class="sr-only">{c.title}</h1>
      <div class="chat-head">
        <label class="inline">
          <span class="sr-only">Model</span>
          <select
            aria-label="Model"
            value={c.model}
            onChange={(e) => update({ ...c, model: e.currentTarget.value })}
          >
            {!c.model && <option value="">Choose a model</option>}
            {c.model && !modelList.some((m) => m.name === c.model) && (
              <option value={c.model}>{c.model} (not installed)</option>
            )}
            {modelList.map((m) => (
              <option value={m.name}>{m.name}</option>
            ))}
          </select>
        </label>
        {caps.includes('thinking') && (
          <label class="check">
            <input
              type="checkbox"
              checked={c.think ?? true}
              onChange={(e) => update({ ...c, think: e.currentTarget.checked })}
            />
            Think
          </label>
        )}
        <button
          class="small"
          aria-expanded={showSettings}
          aria-controls="conv-settings"
          onClick={() => setShowSettings(!showSettings)}
        >
          Parameters
        </button>
      </div>
      {showSettings && (
        <div id="conv-settings">
          <ConversationSettings c={c} onChange={update} />
        </div>
      )}
      {modelsErr && (
        <p class="error" role="alert">
          Models: {modelsErr}
        </p>
      )}
      <div
        class="messages"
        ref={listRef}
        aria-busy={live}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {c.messages.length === 0 && (
          <div class="empty">
            {modelList.length === 0 ? (
              <p>
                No models installed yet. <a href={href({ page: 'models' })}>Pull or create one</a>.
              </p>
            ) : (
              <p>Send a message to start. Enter sends, Shift+Enter adds a line, Esc stops.</p>
            )}
          </div>
        )}
        {c.messages.map((m, i) => (
          <MessageView
            key={m.id}
            m={m}
            live={live && i === c.messages.length - 1}
            busy={live}
            canRegenerate={i === lastAssistant && i === c.messages.length - 1}
            onRegenerate={() => void runReply(c, c.messages.slice(0, i))}
            onEdit={(t) => void runReply(c, [...c.messages.slice(0, i), { ...m, id: newId(), content: t }])}
          />
        ))}
      </div>
      {/* Announced once per reply, not per token: a live region over the streaming text would
          read every fragment aloud. */}
      <div class="sr-only" role="status">
        {live ? 'Replying…' : c.messages.at(-1)?.role === 'assistant' ? 'Reply complete.' : ''}
      </div>
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        {images.length > 0 && (
          <div class="row">
            <span class="muted">{images.length} image(s) attached</span>
            <button type="button" class="small" onClick={() => setImages([])}>
              Remove
            </button>
          </div>
        )}
        <div class="composer-row">
          <textarea
            ref={inputRef}
            id="composer"
            aria-label="Message"
            placeholder={c.model ? `Message ${c.model}` : 'Choose a model first'}
            rows={2}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                send();
              }
            }}
          />
          {caps.includes('vision') && (
            <label class="button small" title="Attach images">
              Attach<span class="sr-only"> images</span>
              <input
                type="file"
                accept="image/*"
                multiple
                hidden
                onChange={async (e) => {
                  const files = [...(e.currentTarget.files ?? [])];
                  setImages([...images, ...(await Promise.all(files.map(readImage)))]);
                }}
              />
            </label>
          )}
          {live ? (
            <button type="button" class="danger" onClick={() => stopReply(c.id)} title="Stop (Esc)">
              Stop
            </button>
          ) : (
            <button type="submit" class="primary" disabled={!c.model || (!text.trim() && !images.length)}>
              Send
            </button>
          )}
        </div>
      </form>
    </main>
  );
}

export function ChatPage(props: { id?: string; drawer: boolean; closeDrawer: () => void }) {
  const list = useStore(chats);
  const loaded = useStore(chatsLoaded);
  const modelList = useStore(models);
  const current = props.id ? list.find((c) => c.id === props.id) : undefined;

  const newChat = async () => {
    const c = await createChat(current?.model || modelList[0]?.name || '');
    navigate({ page: 'chat', id: c.id });
  };

  // No (or an unknown) id: open the latest chat, or start one.
  useEffect(() => {
    if (!loaded || current) return;
    if (list[0]) navigate({ page: 'chat', id: list[0].id }, true);
    else void createChat(modelList[0]?.name ?? '').then((c) => navigate({ page: 'chat', id: c.id }, true));
  }, [loaded, current?.id, list.length]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey && e.code === 'KeyN') {
        e.preventDefault();
        void newChat();
      } else if ((e.ctrlKey || e.metaKey) && e.key === 'k') {
        e.preventDefault();
        document.getElementById('chat-search')?.focus();
      } else if (e.key === 'Escape' && current) {
        stopReply(current.id);
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  });

  return (
    <div class="chat-page">
      <Sidebar currentId={current?.id} open={props.drawer} onNew={() => void newChat()} />
      {props.drawer && <div class="scrim" onClick={props.closeDrawer} />}
      {current ? <ChatView key={current.id} c={current} /> : <main id="main" class="chat" />}
    </div>
  );
}
