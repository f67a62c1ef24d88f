// Turning a conversation into an /api/chat request, and the streamed chunks back into a reply.
import type { ChatChunk, ChatMessage, ChatRequest, Options } from '../api/types';
import { contentWithFiles } from './attachments';
import type { Conversation, ReplyStats, StoredMessage } from './storage';

export const optionKeys: (keyof Options)[] = [
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'repeat_penalty',
  'num_ctx',
  'num_predict',
  'seed',
];

// Only options the user set; the model's own parameters apply to the rest.
export function cleanOptions(o: Options): Options | undefined {
  const out: Options = {};
  for (const k of optionKeys) {
    const v = o[k];
    if (typeof v === 'number' && Number.isFinite(v)) out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

export function toWire(m: StoredMessage): ChatMessage {
  const w: ChatMessage = { role: m.role, content: contentWithFiles(m) };
  if (m.images?.length) w.images = m.images;
  if (m.tool_calls?.length) w.tool_calls = m.tool_calls;
  return w;
}

// The request for the reply that follows `history` (which ends with the user's message).
export function buildChatRequest(c: Conversation, history: StoredMessage[]): ChatRequest {
  const messages: ChatMessage[] = [];
  if (c.system.trim()) messages.push({ role: 'system', content: c.system });
  // Failed or empty assistant turns carry nothing the model should see again.
  for (const m of history) {
    if (m.role === 'assistant' && m.error && !m.content) continue;
    messages.push(toWire(m));
  }
  const req: ChatRequest = { model: c.model, messages };
  const options = cleanOptions(c.options);
  if (options) req.options = options;
  if (c.think !== undefined) req.think = c.think;
  if (c.format === 'json') req.format = 'json';
  return req;
}

// Folds one streamed chunk into the reply being built. `elapsedMs` is the time since the
// request was sent; the first chunk carrying any output fixes the time to first token.
export function applyChunk(reply: StoredMessage, chunk: ChatChunk, elapsedMs: number): StoredMessage {
  const m = chunk.message;
  const next: StoredMessage = { ...reply };
  if (m) {
    if (m.content) next.content += m.content;
    if (m.thinking) next.thinking = (next.thinking ?? '') + m.thinking;
    if (m.tool_calls?.length) next.tool_calls = [...(next.tool_calls ?? []), ...m.tool_calls];
    const produced = !!(m.content || m.thinking || m.tool_calls?.length);
    if (produced && next.stats?.ttftMs === undefined)
      next.stats = { ...next.stats, ttftMs: elapsedMs };
  }
  if (chunk.done) {
    next.stats = {
      ...next.stats,
      evalCount: chunk.eval_count,
      evalDuration: chunk.eval_duration,
      promptEvalCount: chunk.prompt_eval_count,
      promptEvalDuration: chunk.prompt_eval_duration,
      totalDuration: chunk.total_duration,
      loadDuration: chunk.load_duration,
      doneReason: chunk.done_reason,
    };
  }
  return next;
}

export function tokensPerSecond(s: ReplyStats | undefined): number | undefined {
  if (!s?.evalCount || !s.evalDuration) return undefined;
  return (s.evalCount / s.evalDuration) * 1e9;
}

export function titleFrom(text: string): string {
  const line = text.trim().split('\n')[0]?.trim() ?? '';
  if (!line) return 'New chat';
  return line.length > 48 ? `${line.slice(0, 47)}…` : line;
}
