import { useEffect, useRef, useState } from 'preact/hooks';
import type { Options } from '../api/types';
import { addVersion, forkForNewVersion, switchVersion } from '../lib/branches';
import { optionKeys } from '../lib/chat';
import { contextWindow, usedTokens } from '../lib/context';
import { newId, type Conversation, type StoredMessage } from '../lib/storage';
import { useStore } from '../lib/store';
import { chats, chatsLoaded, createChat, runReply, saveChat, stopReply, streaming } from '../state/chats';
import { loadShow, refreshRunning, running, runningModel, shown } from '../state/model_info';
import { capabilitiesOf, models, modelsError, modelsLoaded } from '../state/models';
import { navigate } from '../state/route';
import { Composer, ContextMeter, pendingTokens, useAttachments } from './Composer';
import { MessageView } from './MessageView';
import { PullBox } from './PullBox';
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

// Small models to start with (Ollama library names), offered when nothing is installed.
const suggestedModels = ['llama3.2:1b', 'qwen3:0.6b', 'gemma3:1b'];

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

// Nothing installed: say so and pull one right here. After the pull the box stays (with its
// finished progress) until the first message, saying the model is ready.
function FirstRun(props: { pulled: string; onPulled: (model: string) => void }) {
  return (
    <section class="first-run" aria-labelledby="first-run-h">
      <h2 id="first-run-h">{props.pulled ? `${props.pulled} is ready` : 'No models installed yet'}</h2>
      <p>
        {props.pulled
          ? 'Send a message below to start chatting with it.'
          : 'Pull one to start chatting: pick a suggestion (edit it if you like) or type any name from a registry. Small models answer fastest.'}
      </p>
      <PullBox suggestions={suggestedModels} onPulled={props.onPulled} />
    </section>
  );
}

function ChatView(props: { c: Conversation }) {
  const { c } = props;
  const modelList = useStore(models);
  const modelsErr = useStore(modelsError);
  const modelsReady = useStore(modelsLoaded);
  const live = useStore(streaming).has(c.id);
  const show = useStore(shown)[c.model];
  const instance = runningModel(useStore(running), c.model);
  const [text, setText] = useState('');
  const [showSettings, setShowSettings] = useState(false);
  const [dropping, setDropping] = useState(false);
  const [pulledHere, setPulledHere] = useState('');
  const listRef = useRef<HTMLDivElement>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const stick = useRef(true);
  const caps = show?.capabilities ?? capabilitiesOf(c.model);
  const vision = caps.includes('vision');
  const att = useAttachments(c.model, vision);
  const ctxWindow = contextWindow(c.options.num_ctx, show, instance);
  const used = usedTokens(c.messages);
  const update = (next: Conversation) => void saveChat({ ...next, updatedAt: c.updatedAt });

  // A conversation without a model takes the first installed one.
  useEffect(() => {
    if (!c.model && modelList[0]) update({ ...c, model: modelList[0].name });
  }, [c.id, c.model, modelList]);
  useEffect(() => loadShow(c.model), [c.model, modelList]);
  useEffect(() => void refreshRunning(), [c.id]);
  // Follow the stream unless the user scrolled up to read.
  useEffect(() => {
    const el = listRef.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [c.messages]);
  useEffect(() => inputRef.current?.focus(), [c.id]);

  const send = () => {
    const t = text.trim();
    const msg: StoredMessage = { id: newId(), role: 'user', content: t };
    if (att.files.length) msg.files = att.files;
    if (att.images.length) msg.images = att.images.map((i) => i.base64);
    setText('');
    att.clear();
    stick.current = true;
    void runReply(c, [...c.messages, msg]);
  };
  const hasFiles = (e: DragEvent) => !!e.dataTransfer?.types.includes('Files');

  return (
    <main
      id="main"
      class={`chat ${dropping ? 'dropping' : ''}`}
      tabIndex={-1}
      onDragOver={(e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        setDropping(true);
      }}
      onDragLeave={(e) => {
        if (e.relatedTarget === null || !e.currentTarget.contains(e.relatedTarget as Node)) setDropping(false);
      }}
      onDrop={(e) => {
        if (!hasFiles(e)) return;
        e.preventDefault();
        setDropping(false);
        att.add([...(e.dataTransfer?.files ?? [])]);
      }}
    >
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
        <ContextMeter used={used} pending={pendingTokens(text, att.files)} ctxWindow={ctxWindow} />
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
        {c.messages.length === 0 &&
          ((modelsReady && modelList.length === 0 && !modelsErr) || pulledHere ? (
            <FirstRun
              pulled={pulledHere}
              onPulled={(m) => {
                setPulledHere(m);
                inputRef.current?.focus();
              }}
            />
          ) : (
            <div class="empty">
              <p>Send a message to start. Enter sends, Shift+Enter adds a line, Esc stops.</p>
              <p>Attach, paste or drop text, source and PDF files{vision ? ' or images' : ''} to ask about them.</p>
            </div>
          ))}
        {c.messages.map((m, i) => (
          <MessageView
            key={m.id}
            m={m}
            live={live && i === c.messages.length - 1}
            busy={live}
            canRegenerate={m.role === 'assistant'}
            onRegenerate={() => void runReply(c, c.messages.slice(0, i), forkForNewVersion(c.messages, i))}
            onEdit={(t) => void runReply(c, addVersion(c.messages, i, { ...m, id: newId(), content: t }))}
            onSwitch={(k) => update({ ...c, messages: switchVersion(c.messages, i, k) })}
          />
        ))}
      </div>
      {/* Announced once per reply, not per token: a live region over the streaming text would
          read every fragment aloud. */}
      <div class="sr-only" role="status">
        {live ? 'Replying…' : c.messages.at(-1)?.role === 'assistant' ? 'Reply complete.' : ''}
      </div>
      {dropping && (
        <div class="drop-hint" aria-hidden="true">
          Drop files to attach them
        </div>
      )}
      <Composer
        model={c.model}
        vision={vision}
        live={live}
        att={att}
        text={text}
        setText={setText}
        used={used}
        ctxWindow={ctxWindow}
        onSend={send}
        onStop={() => stopReply(c.id)}
        inputRef={inputRef}
      />
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
