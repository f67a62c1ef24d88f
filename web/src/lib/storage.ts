// Conversations live in the browser's IndexedDB (one object store keyed by id), so they survive
// reloads and never leave the machine unless exported.
import type { ChatMessage, Options } from '../api/types';

export interface ReplyStats {
  evalCount?: number;
  evalDuration?: number; // ns, as the server reports it
  promptEvalCount?: number;
  promptEvalDuration?: number;
  totalDuration?: number;
  loadDuration?: number;
  ttftMs?: number; // measured in the browser: request sent → first token seen
  doneReason?: string;
}

export interface StoredMessage extends ChatMessage {
  id: string;
  model?: string;
  stats?: ReplyStats;
  error?: string;
  stopped?: boolean;
}

export interface Conversation {
  id: string;
  title: string;
  model: string;
  system: string;
  options: Options;
  think?: boolean;
  format?: '' | 'json';
  messages: StoredMessage[];
  createdAt: number;
  updatedAt: number;
}

export const EXPORT_FORMAT = 'vkllm-conversations';

export function newId(): string {
  return crypto.randomUUID();
}

export function newConversation(model = ''): Conversation {
  const now = Date.now();
  return { id: newId(), title: 'New chat', model, system: '', options: {}, messages: [], createdAt: now, updatedAt: now };
}

function promised<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

const STORE = 'conversations';

export class ConversationStore {
  private db?: Promise<IDBDatabase>;

  constructor(
    private readonly name = 'vkllm',
    private readonly factory: IDBFactory = indexedDB,
  ) {}

  private open(): Promise<IDBDatabase> {
    this.db ??= new Promise((resolve, reject) => {
      const req = this.factory.open(this.name, 1);
      req.onupgradeneeded = () => {
        req.result.createObjectStore(STORE, { keyPath: 'id' });
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error ?? new Error('cannot open IndexedDB'));
      req.onblocked = () => reject(new Error('IndexedDB is blocked by another tab'));
    });
    return this.db;
  }

  // Newest first.
  async list(): Promise<Conversation[]> {
    const db = await this.open();
    const all = await promised(db.transaction(STORE).objectStore(STORE).getAll() as IDBRequest<Conversation[]>);
    return all.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  async get(id: string): Promise<Conversation | undefined> {
    const db = await this.open();
    return promised(db.transaction(STORE).objectStore(STORE).get(id) as IDBRequest<Conversation | undefined>);
  }

  async put(c: Conversation): Promise<void> {
    const db = await this.open();
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).put(c);
    await done(tx);
  }

  async remove(id: string): Promise<void> {
    const db = await this.open();
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).delete(id);
    await done(tx);
  }

  async search(query: string): Promise<Conversation[]> {
    return filterConversations(await this.list(), query);
  }

  async exportJson(): Promise<string> {
    return JSON.stringify({ format: EXPORT_FORMAT, version: 1, conversations: await this.list() }, null, 2);
  }

  // Adds (or replaces, by id) the conversations in an export; returns how many. Throws with a
  // message naming the problem when the file is not an export.
  async importJson(text: string): Promise<number> {
    const list = parseExport(text);
    const db = await this.open();
    const tx = db.transaction(STORE, 'readwrite');
    for (const c of list) tx.objectStore(STORE).put(c);
    await done(tx);
    return list.length;
  }
}

export function filterConversations(list: Conversation[], query: string): Conversation[] {
  const q = query.trim().toLowerCase();
  if (!q) return list;
  return list.filter(
    (c) =>
      c.title.toLowerCase().includes(q) ||
      c.messages.some((m) => m.content.toLowerCase().includes(q)),
  );
}

const roles = new Set(['system', 'user', 'assistant', 'tool']);

export function parseExport(text: string): Conversation[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error('not a JSON file');
  }
  const obj = data as { format?: unknown; conversations?: unknown };
  if (!obj || obj.format !== EXPORT_FORMAT || !Array.isArray(obj.conversations))
    throw new Error(`not a ${EXPORT_FORMAT} export`);
  return obj.conversations.map((raw, i) => {
    const c = raw as Partial<Conversation>;
    const where = `conversation ${i + 1}`;
    if (typeof c.id !== 'string' || !c.id) throw new Error(`${where}: missing id`);
    if (!Array.isArray(c.messages)) throw new Error(`${where}: missing messages`);
    const messages = c.messages.map((m, j) => {
      if (!m || !roles.has(m.role) || typeof m.content !== 'string')
        throw new Error(`${where}, message ${j + 1}: needs a role and text content`);
      return { ...m, id: typeof m.id === 'string' && m.id ? m.id : newId() };
    });
    const now = Date.now();
    return {
      id: c.id,
      title: typeof c.title === 'string' && c.title ? c.title : 'Imported chat',
      model: typeof c.model === 'string' ? c.model : '',
      system: typeof c.system === 'string' ? c.system : '',
      options: c.options && typeof c.options === 'object' ? c.options : {},
      ...(typeof c.think === 'boolean' ? { think: c.think } : {}),
      ...(c.format === 'json' ? { format: 'json' as const } : {}),
      messages,
      createdAt: typeof c.createdAt === 'number' ? c.createdAt : now,
      updatedAt: typeof c.updatedAt === 'number' ? c.updatedAt : now,
    };
  });
}
