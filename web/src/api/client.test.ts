// The client against a real local HTTP server: the API key only after the user gives one, the
// server's error text surfaced, and a lost connection noticed and recovered.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settings } from '../lib/settings';
import { api, ApiError, connection } from './client';

let server: http.Server;
let url = '';
const seenAuth: (string | undefined)[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seenAuth.push(req.headers.authorization);
    if (req.headers.authorization !== 'Bearer s3cret') {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end('{"error":"unauthorized"}');
    }
    if (req.url === '/api/tags') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"models":[{"name":"tiny:latest"}]}');
    }
    if (req.url === '/api/show') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end('{"error":"model \'nope:latest\' not found"}');
    }
    if (req.url === '/api/version') {
      res.writeHead(200);
      return res.end('{"version":"0.1.0"}');
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('api client', () => {
  it('asks for the key on 401 and sends it as a Bearer token once given', async () => {
    settings.set({ ...settings.get(), serverUrl: url, apiKey: '' });
    const err = await api.tags().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(401);
    expect((err as ApiError).message).toMatch(/asks for an API key/);
    expect(seenAuth.at(-1)).toBeUndefined();
    expect(connection.get().state).toBe('unauthorized');

    settings.set({ ...settings.get(), apiKey: 'wrong' });
    await expect(api.tags()).rejects.toThrow(/rejected the API key/);

    settings.set({ ...settings.get(), apiKey: 's3cret' });
    expect((await api.tags()).map((m) => m.name)).toEqual(['tiny:latest']);
    expect(seenAuth.at(-1)).toBe('Bearer s3cret');
    expect(connection.get().state).toBe('ok');
  });

  it("shows the server's own error text", async () => {
    settings.set({ ...settings.get(), serverUrl: url, apiKey: 's3cret' });
    await expect(api.show('nope')).rejects.toThrow("model 'nope:latest' not found");
    await expect(api.metrics()).rejects.toMatchObject({ status: 404, message: '404 page not found' });
  });

  it('says when the server is unreachable and notices when it is back', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    settings.set({ ...settings.get(), serverUrl: `http://127.0.0.1:${port}`, apiKey: 's3cret' });
    const err = await api.tags().catch((e: unknown) => e);
    expect((err as ApiError).message).toBe(`cannot reach the server at http://127.0.0.1:${port}`);
    expect(connection.get().state).toBe('lost');
    const epoch = connection.get().epoch;
    // The server "comes back" (here: the address is fixed without touching settings' epoch bump).
    settings.get().serverUrl = url;
    await new Promise((r) => setTimeout(r, 2500));
    expect(connection.get().state).toBe('ok');
    expect(connection.get().epoch).toBe(epoch + 1);
  });
});
