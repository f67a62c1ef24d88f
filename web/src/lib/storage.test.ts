import { IDBFactory } from 'fake-indexeddb';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConversationStore, filterConversations, newConversation, parseExport, type Conversation } from './storage';

let store: ConversationStore;
beforeEach(() => {
  store = new ConversationStore('test', new IDBFactory());
});

function conv(title: string, updatedAt: number, text = ''): Conversation {
  return {
    ...newConversation('tiny'),
    title,
    updatedAt,
    messages: text ? [{ id: `m-${title}`, role: 'user', content: text }] : [],
  };
}

describe('ConversationStore', () => {
  it('stores, lists newest first, updates and deletes', async () => {
    const a = conv('first', 1);
    const b = conv('second', 2);
    await store.put(a);
    await store.put(b);
    expect((await store.list()).map((c) => c.title)).toEqual(['second', 'first']);
    await store.put({ ...a, title: 'renamed', updatedAt: 3 });
    expect((await store.list()).map((c) => c.title)).toEqual(['renamed', 'second']);
    expect((await store.get(a.id))?.title).toBe('renamed');
    await store.remove(b.id);
    expect((await store.list()).map((c) => c.id)).toEqual([a.id]);
    expect(await store.get(b.id)).toBeUndefined();
  });

  it('keeps everything a conversation holds', async () => {
    const c: Conversation = {
      ...conv('full', 5),
      system: 'be brief',
      options: { temperature: 0.2, num_ctx: 2048 },
      think: false,
      format: 'json',
      messages: [
        { id: '1', role: 'user', content: 'hi', images: ['aGk='] },
        {
          id: '2',
          role: 'assistant',
          content: 'hello',
          thinking: 'hmm',
          tool_calls: [{ function: { name: 'f', arguments: { x: 1 } } }],
          stats: { evalCount: 3, evalDuration: 1e9, ttftMs: 12 },
        },
      ],
    };
    await store.put(c);
    expect(await store.get(c.id)).toEqual(c);
  });

  it('searches titles and message text, case-insensitively', async () => {
    await store.put(conv('Rust lifetimes', 1, 'what is a borrow'));
    await store.put(conv('Cooking', 2, 'How long to boil an EGG'));
    expect((await store.search('egg')).map((c) => c.title)).toEqual(['Cooking']);
    expect((await store.search('RUST')).map((c) => c.title)).toEqual(['Rust lifetimes']);
    expect(await store.search('nothing like this')).toEqual([]);
    expect(await store.search('  ')).toHaveLength(2);
  });

  it('exports and imports into another browser profile', async () => {
    await store.put(conv('one', 1, 'a'));
    await store.put(conv('two', 2, 'b'));
    const json = await store.exportJson();
    const other = new ConversationStore('other', new IDBFactory());
    expect(await other.importJson(json)).toBe(2);
    expect(await other.list()).toEqual(await store.list());
    // Importing again replaces by id instead of duplicating.
    expect(await other.importJson(json)).toBe(2);
    expect(await other.list()).toHaveLength(2);
  });
});

describe('parseExport', () => {
  it('rejects files that are not exports, naming the problem', () => {
    expect(() => parseExport('nope')).toThrow('not a JSON file');
    expect(() => parseExport('{"conversations":[]}')).toThrow('not a vkllm-conversations export');
    expect(() =>
      parseExport('{"format":"vkllm-conversations","conversations":[{"id":"x","messages":[{"role":"robot","content":"a"}]}]}'),
    ).toThrow('conversation 1, message 1: needs a role and text content');
    expect(() => parseExport('{"format":"vkllm-conversations","conversations":[{"messages":[]}]}')).toThrow(
      'conversation 1: missing id',
    );
  });

  it('fills in what an older or hand-written export lacks', () => {
    const [c] = parseExport(
      '{"format":"vkllm-conversations","conversations":[{"id":"x","messages":[{"role":"user","content":"hi"}]}]}',
    );
    expect(c?.title).toBe('Imported chat');
    expect(c?.options).toEqual({});
    expect(c?.messages[0]?.id).toMatch(/[0-9a-f-]{36}/);
  });

  it('imports an old (version 1) export unchanged', () => {
    const v1 = JSON.stringify({
      format: 'vkllm-conversations',
      version: 1,
      conversations: [
        {
          id: 'old',
          title: 'Old chat',
          model: 'tiny',
          system: '',
          options: { temperature: 0.5 },
          messages: [
            { id: 'u', role: 'user', content: 'hi', images: ['aGk='] },
            { id: 'a', role: 'assistant', content: 'hello', stats: { evalCount: 2 } },
          ],
          createdAt: 1,
          updatedAt: 2,
        },
      ],
    });
    const [c] = parseExport(v1);
    expect(c?.messages).toEqual([
      { id: 'u', role: 'user', content: 'hi', images: ['aGk='] },
      { id: 'a', role: 'assistant', content: 'hello', stats: { evalCount: 2 } },
    ]);
    expect(c?.options).toEqual({ temperature: 0.5 });
  });

  it('round-trips versions and attached files, and rejects broken versions', async () => {
    const c: Conversation = {
      ...conv('branched', 3),
      messages: [
        {
          id: 'q2',
          role: 'user',
          content: 'edited',
          files: [{ name: 'a.pdf', kind: 'pdf', size: 900, text: 'PDF text', pages: 2 }],
          fork: {
            active: 1,
            versions: [
              [
                { id: 'q1', role: 'user', content: 'first' },
                {
                  id: 'a1',
                  role: 'assistant',
                  content: 'reply 1b',
                  fork: { active: 1, versions: [[{ id: 'a0', role: 'assistant', content: 'reply 1a' }], []] },
                },
              ],
              [],
            ],
          },
        },
      ],
    };
    await store.put(c);
    const json = await store.exportJson();
    expect(JSON.parse(json).version).toBe(2);
    const other = new ConversationStore('other2', new IDBFactory());
    await other.importJson(json);
    expect(await other.get(c.id)).toEqual(c);
    // Search reaches text in versions not shown.
    expect(filterConversations([c], 'reply 1a')).toHaveLength(1);

    const bad = (fork: unknown) =>
      JSON.stringify({ format: 'vkllm-conversations', version: 2, conversations: [{ id: 'x', messages: [{ role: 'user', content: 'a', fork }] }] });
    expect(() => parseExport(bad({ active: 2, versions: [[], []] }))).toThrow('conversation 1, message 1: versions need');
    expect(() => parseExport(bad({ active: 0, versions: [[], []] }))).toThrow('conversation 1, message 1, version 2: needs its messages');
    expect(() => parseExport(bad({ active: 0, versions: [[], [{ role: 'x', content: '' }]] }))).toThrow(
      'conversation 1, message 1, version 2, message 1: needs a role',
    );
    expect(() =>
      parseExport(JSON.stringify({ format: 'vkllm-conversations', version: 9, conversations: [] })),
    ).toThrow('export version 9 is newer');
  });
});

