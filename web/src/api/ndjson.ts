// Ollama's streaming wire format: one JSON object per line (§1.7). An object with an "error"
// key is the server reporting a failure after the stream began; it must surface, not vanish.

export class StreamError extends Error {}

// Incremental decoder: bytes in (split anywhere, even inside a UTF-8 sequence), objects out.
export class NdjsonDecoder<T = unknown> {
  private readonly text = new TextDecoder('utf-8');
  private pending = '';

  // Lazy, so the objects before a bad line still reach the caller before the error does.
  *push(bytes: Uint8Array): Generator<T> {
    this.pending += this.text.decode(bytes, { stream: true });
    const lines = this.pending.split('\n');
    this.pending = lines.pop() ?? '';
    for (const l of lines) yield* this.parse(l);
  }

  // The stream ended: a last line without its newline still counts.
  *end(): Generator<T> {
    this.pending += this.text.decode();
    const rest = this.pending;
    this.pending = '';
    yield* this.parse(rest);
  }

  private parse(line: string): T[] {
    const trimmed = line.trim();
    if (trimmed === '') return [];
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch {
      throw new StreamError(`server sent a malformed line: ${trimmed.slice(0, 120)}`);
    }
    if (value !== null && typeof value === 'object' && 'error' in value) {
      const message = (value as { error: unknown }).error;
      throw new StreamError(typeof message === 'string' ? message : JSON.stringify(message));
    }
    return [value as T];
  }
}

export async function* readNdjson<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const decoder = new NdjsonDecoder<T>();
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* decoder.push(value);
    }
    finished = true;
    yield* decoder.end();
  } finally {
    // A consumer that stops early (or an error line) must not leave the response open.
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}
