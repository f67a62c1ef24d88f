import { useRef, useState } from 'preact/hooks';
import { filterConversations } from '../lib/storage';
import { useStore } from '../lib/store';
import { chats, chatsError, db, deleteChat, loadChats, saveChat, streaming } from '../state/chats';
import { confirmDialog } from '../state/dialog';
import { href, navigate } from '../state/route';

export function Sidebar(props: { currentId?: string; open: boolean; onNew: () => void }) {
  const list = useStore(chats);
  const live = useStore(streaming);
  const error = useStore(chatsError);
  const [query, setQuery] = useState('');
  const [renaming, setRenaming] = useState<string | null>(null);
  const [note, setNote] = useState('');
  const fileRef = useRef<HTMLInputElement>(null);
  const shown = filterConversations(list, query);

  const exportAll = async () => {
    const blob = new Blob([await db.exportJson()], { type: 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `vkllm-chats-${new Date().toISOString().slice(0, 10)}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  const importFile = async (file: File) => {
    try {
      const n = await db.importJson(await file.text());
      await loadChats();
      setNote(`Imported ${n} conversation${n === 1 ? '' : 's'}.`);
    } catch (e) {
      setNote(`Import failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const remove = async (id: string, title: string) => {
    if (!(await confirmDialog(`Delete the conversation “${title}”?`))) return;
    await deleteChat(id);
    if (id === props.currentId) navigate({ page: 'chat' }, true);
  };

  return (
    <aside id="sidebar" class={`sidebar ${props.open ? 'open' : ''}`} aria-label="Conversations">
      <button class="primary wide" onClick={props.onNew} title="New chat (Alt+N)">
        + New chat
      </button>
      <input
        type="search"
        class="wide"
        placeholder="Search chats (Ctrl+K)"
        aria-label="Search conversations"
        id="chat-search"
        value={query}
        onInput={(e) => setQuery(e.currentTarget.value)}
      />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="convs">
        {shown.map((c) => (
          <li key={c.id} class={c.id === props.currentId ? 'current' : ''}>
            {renaming === c.id ? (
              <form
                onSubmit={(e) => {
                  e.preventDefault();
                  const v = (new FormData(e.currentTarget).get('title') as string).trim();
                  if (v) void saveChat({ ...c, title: v });
                  setRenaming(null);
                }}
              >
                <input
                  name="title"
                  aria-label="New title"
                  defaultValue={c.title}
                  autoFocus
                  onKeyDown={(e) => e.key === 'Escape' && setRenaming(null)}
                  onBlur={(e) => e.currentTarget.form?.requestSubmit()}
                />
              </form>
            ) : (
              <>
                <a
                  href={href({ page: 'chat', id: c.id })}
                  aria-current={c.id === props.currentId ? 'page' : undefined}
                  class="conv-title"
                >
                  {live.has(c.id) && <span class="dot" aria-label="replying" />}
                  {c.title}
                </a>
                <button class="icon small" aria-label={`Rename ${c.title}`} onClick={() => setRenaming(c.id)}>
                  ✎
                </button>
                <button class="icon small" aria-label={`Delete ${c.title}`} onClick={() => void remove(c.id, c.title)}>
                  ×
                </button>
              </>
            )}
          </li>
        ))}
        {shown.length === 0 && <li class="muted">{query ? 'No chat matches.' : 'No chats yet.'}</li>}
      </ul>
      <div class="row">
        <button onClick={() => void exportAll()}>Export</button>
        <button onClick={() => fileRef.current?.click()}>Import</button>
        <input
          ref={fileRef}
          type="file"
          accept="application/json,.json"
          hidden
          aria-label="Import conversations file"
          onChange={(e) => {
            const f = e.currentTarget.files?.[0];
            if (f) void importFile(f);
            e.currentTarget.value = '';
          }}
        />
      </div>
      {note && (
        <p class="muted" role="status">
          {note}
        </p>
      )}
    </aside>
  );
}
