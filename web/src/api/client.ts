// Every call the UI makes to the server goes through here: the configured address, the API key
// (Authorization: Bearer) once the user gave one, errors turned into messages the views show,
// and the connection state (lost → probed until the server answers again).
import { readNdjson } from './ndjson';
import type {
  ChatChunk,
  ChatRequest,
  CreateRequest,
  ProgressLine,
  RunningModel,
  ShowResponse,
  TagModel,
} from './types';
import { settings } from '../lib/settings';
import { Store } from '../lib/store';

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export type ConnectionState = 'ok' | 'lost' | 'unauthorized';
export interface Connection {
  state: ConnectionState;
  // Bumped every time the server is reachable again, so views reload what they show.
  epoch: number;
}
export const connection = new Store<Connection>({ state: 'ok', epoch: 0 });

export function serverLabel(): string {
  return settings.get().serverUrl || location.origin;
}

function authHeaders(init?: HeadersInit): Headers {
  const headers = new Headers(init);
  const key = settings.get().apiKey;
  if (key) headers.set('Authorization', `Bearer ${key}`);
  return headers;
}

let probe: ReturnType<typeof setInterval> | undefined;
function markLost(): void {
  if (connection.get().state === 'lost') return;
  connection.set({ ...connection.get(), state: 'lost' });
  probe ??= setInterval(() => {
    fetch(`${settings.get().serverUrl}/api/version`, { cache: 'no-store', headers: authHeaders() })
      .then((r) => {
        if (r.status < 500) markOk(r.status === 401);
      })
      .catch(() => undefined);
  }, 2000);
}
function markOk(unauthorized = false): void {
  if (probe !== undefined) {
    clearInterval(probe);
    probe = undefined;
  }
  const c = connection.get();
  const state: ConnectionState = unauthorized ? 'unauthorized' : 'ok';
  if (c.state === 'lost') connection.set({ state, epoch: c.epoch + 1 });
  else if (c.state !== state) connection.set({ ...c, state });
}
// A new address or key: try again at once.
settings.subscribe(() => {
  const c = connection.get();
  connection.set({ state: 'ok', epoch: c.epoch + 1 });
});

// The server's words for a failed request: Ollama's {"error": "..."}, OpenAI's
// {"error": {"message": "..."}}, or the plain text body.
export async function errorMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const j = JSON.parse(text) as { error?: unknown };
    if (typeof j.error === 'string' && j.error) return j.error;
    if (j.error && typeof j.error === 'object' && 'message' in j.error)
      return String((j.error as { message: unknown }).message);
  } catch {
    // not JSON: use the text
  }
  return text.trim() || `${res.status} ${res.statusText}`.trim();
}

export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const s = settings.get();
  const headers = authHeaders(init.headers);
  if (init.body !== undefined && !headers.has('Content-Type'))
    headers.set('Content-Type', 'application/json');
  let res: Response;
  try {
    res = await fetch(`${s.serverUrl}${path}`, { ...init, headers });
  } catch (e) {
    if (init.signal?.aborted) throw e;
    markLost();
    throw new ApiError(`cannot reach the server at ${serverLabel()}`, 0);
  }
  if (res.status === 401) {
    markOk(true);
    throw new ApiError(
      s.apiKey
        ? 'the server rejected the API key (Settings)'
        : 'the server asks for an API key: enter it in Settings',
      401,
    );
  }
  markOk();
  if (!res.ok) throw new ApiError(await errorMessage(res), res.status);
  return res;
}

async function json<T>(path: string, body?: unknown, method?: string): Promise<T> {
  const res = await request(path, {
    method: method ?? (body === undefined ? 'GET' : 'POST'),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

async function* stream<T>(path: string, body: unknown, signal?: AbortSignal): AsyncGenerator<T> {
  const res = await request(path, { method: 'POST', body: JSON.stringify(body), signal });
  if (!res.body) throw new ApiError('the server sent no body', res.status);
  yield* readNdjson<T>(res.body);
}

export const api = {
  version: () => json<{ version: string }>('/api/version'),
  tags: async () => (await json<{ models: TagModel[] | null }>('/api/tags')).models ?? [],
  show: (model: string) => json<ShowResponse>('/api/show', { model }),
  ps: async () => (await json<{ models: RunningModel[] | null }>('/api/ps')).models ?? [],
  chat: (req: ChatRequest, signal?: AbortSignal) =>
    stream<ChatChunk>('/api/chat', { ...req, stream: true }, signal),
  pull: (model: string, insecure: boolean, signal?: AbortSignal) =>
    stream<ProgressLine>('/api/pull', { model, insecure, stream: true }, signal),
  create: (req: CreateRequest, signal?: AbortSignal) =>
    stream<ProgressLine>('/api/create', { ...req, stream: true }, signal),
  remove: (model: string) => json<unknown>('/api/delete', { model }, 'DELETE'),
  copy: (source: string, destination: string) =>
    json<unknown>('/api/copy', { source, destination }),
  // Ollama's way to unload: generate with no prompt and keep_alive 0 (§1.5).
  unload: (model: string) => json<unknown>('/api/generate', { model, keep_alive: 0 }),
  metrics: async () => (await request('/metrics', { cache: 'no-store' })).text(),
};
