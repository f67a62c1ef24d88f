// The conversations the UI holds (mirrored in IndexedDB) and the replies being streamed. A
// reply keeps streaming when the user switches conversations; Stop aborts its request, which
// makes the server cancel generation.
import { api, ApiError } from '../api/client';
import { applyChunk, buildChatRequest, titleFrom } from '../lib/chat';
import { pacer } from '../lib/pace';
import { ConversationStore, newConversation, newId, type Conversation, type Fork, type StoredMessage } from '../lib/storage';
import { Store } from '../lib/store';
import { refreshRunning } from './model_info';

export const db = new ConversationStore();
export const chats = new Store<Conversation[]>([]);
export const chatsLoaded = new Store(false);
export const chatsError = new Store<string>('');
export const streaming = new Store<ReadonlySet<string>>(new Set());
const controllers = new Map<string, AbortController>();

function describe(e: unknown): string {
  if (e instanceof ApiError || e instanceof Error) return e.message;
  return String(e);
}

export async function loadChats(): Promise<void> {
  try {
    chats.set(await db.list());
    chatsError.set('');
  } catch (e) {
    chatsError.set(`Saved chats are unavailable: ${describe(e)}`);
  }
  chatsLoaded.set(true);
}

function replaceInMemory(c: Conversation): void {
  chats.update((list) => {
    const rest = list.filter((x) => x.id !== c.id);
    return [c, ...rest].sort((a, b) => b.updatedAt - a.updatedAt);
  });
}

export function getChat(id: string): Conversation | undefined {
  return chats.get().find((c) => c.id === id);
}

export async function saveChat(c: Conversation): Promise<void> {
  replaceInMemory(c);
  try {
    await db.put(c);
  } catch (e) {
    chatsError.set(`Could not save the chat: ${describe(e)}`);
  }
}

export async function createChat(model: string): Promise<Conversation> {
  const c = newConversation(model);
  await saveChat(c);
  return c;
}

export async function deleteChat(id: string): Promise<void> {
  stopReply(id);
  chats.update((list) => list.filter((c) => c.id !== id));
  try {
    await db.remove(id);
  } catch (e) {
    chatsError.set(`Could not delete the chat: ${describe(e)}`);
  }
}

export function stopReply(id: string): void {
  controllers.get(id)?.abort();
}

function setStreaming(id: string, on: boolean): void {
  const s = new Set(streaming.get());
  if (on) s.add(id);
  else s.delete(id);
  streaming.set(s);
}

// Streams the assistant's reply to `history` (which ends with a user message) into conversation
// `base`, replacing whatever followed `history` before (the caller keeps it as another version,
// lib/branches.ts, when `fork` is given: the reply is then a new version of its position).
export async function runReply(base: Conversation, history: StoredMessage[], fork?: Fork): Promise<void> {
  if (controllers.has(base.id)) return;
  let reply: StoredMessage = { id: newId(), role: 'assistant', content: '', model: base.model };
  if (fork) reply.fork = fork;
  // A title the UI made from the first message follows that message when it is edited; a
  // title the user chose stays.
  const firstUser = history.find((m) => m.role === 'user');
  const oldFirst = base.messages.find((m) => m.role === 'user');
  const automatic = base.title === 'New chat' || (!!oldFirst && base.title === titleFrom(oldFirst.content));
  let conv: Conversation = {
    ...base,
    title: automatic && firstUser ? titleFrom(firstUser.content) : base.title,
    messages: [...history, reply],
    updatedAt: Date.now(),
  };
  // Streaming from the first moment the reply exists, so nothing sees it as finished.
  const ctrl = new AbortController();
  controllers.set(conv.id, ctrl);
  setStreaming(conv.id, true);
  await saveChat(conv);
  const t0 = performance.now();
  // Re-rendering markdown per token is wasteful; ~25 updates a second look continuous, and a
  // long reply (slow to render again) is shown less often, so the page still answers Stop.
  const updates = pacer(() => {
    conv = { ...conv, messages: [...history, reply] };
    replaceInMemory(conv);
  });
  try {
    for await (const chunk of api.chat(buildChatRequest(conv, history), ctrl.signal)) {
      reply = applyChunk(reply, chunk, performance.now() - t0);
      updates.request();
    }
  } catch (e) {
    if (ctrl.signal.aborted) reply = { ...reply, stopped: true };
    else reply = { ...reply, error: describe(e) };
  } finally {
    updates.cancel();
    controllers.delete(conv.id);
    // The conversation may have been edited (renamed, options) while streaming: keep that.
    const latest = getChat(conv.id) ?? conv;
    conv = { ...latest, messages: [...history, reply], updatedAt: Date.now() };
    setStreaming(conv.id, false);
    if (getChat(conv.id)) await saveChat(conv);
    void refreshRunning(); // the model is loaded now: its context window may be known
  }
}
