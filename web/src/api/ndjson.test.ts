import { describe, expect, it } from 'vitest';
import { NdjsonDecoder, readNdjson, StreamError } from './ndjson';

const enc = new TextEncoder();

function streamOf(parts: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const p of parts) c.enqueue(p);
      c.close();
    },
  });
}

async function collect<T>(g: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of g) out.push(v);
  return out;
}

describe('NdjsonDecoder', () => {
  it('yields objects only once their line is complete', () => {
    const d = new NdjsonDecoder();
    expect([...d.push(enc.encode('{"a":1}\n{"b"'))]).toEqual([{ a: 1 }]);
    expect([...d.push(enc.encode(':2}\n\n'))]).toEqual([{ b: 2 }]);
    expect([...d.end()]).toEqual([]);
  });

  it('keeps a multi-byte character split across chunks intact', () => {
    const bytes = enc.encode('{"t":"héllo 🌍"}\n');
    // Split inside the 4-byte emoji and inside the é.
    const cuts = [3, 8, bytes.length - 4, bytes.length - 2];
    const d = new NdjsonDecoder<{ t: string }>();
    const out: { t: string }[] = [];
    let prev = 0;
    for (const c of [...cuts, bytes.length]) {
      out.push(...[...d.push(bytes.slice(prev, c))]);
      prev = c;
    }
    expect(out).toEqual([{ t: 'héllo 🌍' }]);
  });

  it('reads a last line without a newline', () => {
    const d = new NdjsonDecoder();
    expect([...d.push(enc.encode('{"done":true}'))]).toEqual([]);
    expect([...d.end()]).toEqual([{ done: true }]);
  });

  it('turns an error line into a StreamError with the server message', () => {
    const d = new NdjsonDecoder();
    expect(() => [...d.push(enc.encode('{"error":"model \'x\' not found"}\n'))]).toThrow(
      new StreamError("model 'x' not found"),
    );
  });

  it('reports a malformed line instead of skipping it', () => {
    const d = new NdjsonDecoder();
    expect(() => [...d.push(enc.encode('not json\n'))]).toThrow(/malformed line: not json/);
  });

  it('handles CRLF line ends', () => {
    const d = new NdjsonDecoder();
    expect([...d.push(enc.encode('{"a":1}\r\n{"a":2}\r\n'))]).toEqual([{ a: 1 }, { a: 2 }]);
  });
});

describe('readNdjson', () => {
  it('streams the chunks of a chat reply in order', async () => {
    const body = streamOf([
      enc.encode('{"message":{"content":"Hel"},"done":false}\n{"message":{"con'),
      enc.encode('tent":"lo"},"done":false}\n'),
      enc.encode('{"message":{"content":""},"done":true,"eval_count":2}\n'),
    ]);
    const out = await collect(readNdjson<{ message: { content: string }; done: boolean }>(body));
    expect(out.map((c) => c.message.content).join('')).toBe('Hello');
    expect(out.at(-1)?.done).toBe(true);
  });

  it('stops at an error line mid-stream and cancels the body', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode('{"status":"pulling manifest"}\n{"error":"pull model manifest: file does not exist"}\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const seen: unknown[] = [];
    await expect(async () => {
      for await (const v of readNdjson(body)) seen.push(v);
    }).rejects.toThrow('pull model manifest: file does not exist');
    expect(seen).toEqual([{ status: 'pulling manifest' }]);
    expect(cancelled).toBe(true);
  });
});
