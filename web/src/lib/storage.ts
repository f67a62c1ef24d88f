// Conversations live in the browser's IndexedDB (one object store keyed by id), so they survive
// reloads and never leave the machine unless exported.
import type { ChatMessage, Options } from '../api/types';
import { allMessages } from './branches';

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

// A text or PDF file attached to a user message: its text goes to the model as context.
export interface FileAttachment {
  name: string;
  kind: 'text' | 'pdf';
  size: number; // bytes of the file
  text: string;
  pages?: number; // PDFs
}

// Other versions of a message and what followed it (lib/branches.ts).
export interface Fork {
  versions: StoredMessage[][];
  active: number; // versions[active] is [] (the shown version is the conversation's path)
}

export interface StoredMessage extends ChatMessage {
  id: string;
  model?: string;
  stats?: ReplyStats;
  error?: string;
  stopped?: boolean;
  files?: FileAttachment[];
  fork?: Fork;
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
// 1: messages only; 2: messages may carry files and forks (versions). Both import.
export const EXPORT_VERSION = 2;

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
    return JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, conversations: await this.list() }, null, 2);
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
      [...allMessages(c.messages)].some((m) => m.content.toLowerCase().includes(q)),
  );
}

const roles = new Set(['system', 'user', 'assistant', 'tool']);

function parseFiles(raw: unknown, where: string): FileAttachment[] {
  if (!Array.isArray(raw)) throw new Error(`${where}: files must be a list`);
  return raw.map((f: Partial<FileAttachment>, k) => {
    if (!f || typeof f.name !== 'string' || typeof f.text !== 'string' || (f.kind !== 'text' && f.kind !== 'pdf'))
      throw new Error(`${where}, file ${k + 1}: needs a name, a kind (text or pdf) and its text`);
    return {
      name: f.name,
      kind: f.kind,
      size: typeof f.size === 'number' ? f.size : f.text.length,
      text: f.text,
      ...(typeof f.pages === 'number' ? { pages: f.pages } : {}),
    };
  });
}

// Messages of one path; `where` names the place for error messages ("conversation 2, message 3").
function parseMessages(raw: unknown[], where: string, depth: number): StoredMessage[] {
  if (depth > 256) throw new Error(`${where}: versions nested too deeply`);
  return raw.map((x, j) => {
    const m = x as Partial<StoredMessage> & { fork?: unknown; files?: unknown };
    const here = `${where}message ${j + 1}`;
    if (!m || !roles.has(m.role as string) || typeof m.content !== 'string')
      throw new Error(`${here}: needs a role and text content`);
    const out: StoredMessage = { ...(m as StoredMessage), id: typeof m.id === 'string' && m.id ? m.id : newId() };
    if (m.files !== undefined) out.files = parseFiles(m.files, here);
    if (m.fork !== undefined) {
      const f = m.fork as Partial<Fork>;
      if (!f || !Array.isArray(f.versions) || typeof f.active !== 'number' || !Number.isInteger(f.active) ||
          f.active < 0 || f.active >= f.versions.length)
        throw new Error(`${here}: versions need a list and the index of the one shown`);
      out.fork = {
        active: f.active,
        versions: f.versions.map((v, k) => {
          if (!Array.isArray(v) || (k !== f.active && v.length === 0))
            throw new Error(`${here}, version ${k + 1}: needs its messages`);
          return k === f.active ? [] : parseMessages(v, `${here}, version ${k + 1}, `, depth + 1);
        }),
      };
    }
    return out;
  });
}

export function parseExport(text: string): Conversation[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error('not a JSON file');
  }
  const obj = data as { format?: unknown; version?: unknown; conversations?: unknown };
  if (!obj || obj.format !== EXPORT_FORMAT || !Array.isArray(obj.conversations))
    throw new Error(`not a ${EXPORT_FORMAT} export`);
  if (typeof obj.version === 'number' && obj.version > EXPORT_VERSION)
    throw new Error(`export version ${obj.version} is newer than this UI reads (${EXPORT_VERSION})`);
  return obj.conversations.map((raw, i) => {
    const c = raw as Partial<Conversation>;
    const where = `conversation ${i + 1}`;
    if (typeof c.id !== 'string' || !c.id) throw new Error(`${where}: missing id`);
    if (!Array.isArray(c.messages)) throw new Error(`${where}: missing messages`);
    const messages = parseMessages(c.messages, `${where}, `, 0);
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
