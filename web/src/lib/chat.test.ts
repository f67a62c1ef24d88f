import { describe, expect, it } from 'vitest';
import { applyChunk, buildChatRequest, tokensPerSecond, titleFrom } from './chat';
import { newConversation, type StoredMessage } from './storage';

describe('buildChatRequest', () => {
  it('puts the system prompt first and sends only the options that were set', () => {
    const c = { ...newConversation('tiny'), system: 'be brief', options: { temperature: 0, seed: 7, top_k: NaN } };
    const history: StoredMessage[] = [
      { id: '1', role: 'user', content: 'hi' },
      { id: '2', role: 'assistant', content: 'yo', stats: { evalCount: 1 }, thinking: 'x' },
      { id: '3', role: 'assistant', content: '', error: 'boom' },
      { id: '4', role: 'user', content: 'again' },
    ];
    expect(buildChatRequest(c, history)).toEqual({
      model: 'tiny',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yo' },
        { role: 'user', content: 'again' },
      ],
      options: { temperature: 0, seed: 7 },
    });
  });

  it('passes think and format json when chosen', () => {
    const c = { ...newConversation('q'), think: false, format: 'json' as const };
    const r = buildChatRequest(c, [{ id: '1', role: 'user', content: 'x', images: ['aGk='] }]);
    expect(r.think).toBe(false);
    expect(r.format).toBe('json');
    expect(r.options).toBeUndefined();
    expect(r.messages[0]?.images).toEqual(['aGk=']);
  });
});

describe('applyChunk', () => {
  it('accumulates content, thinking and tool calls; times the first token; takes final stats', () => {
    let m: StoredMessage = { id: 'r', role: 'assistant', content: '' };
    const chunk = (message: object, extra: object = {}) => ({ model: 't', created_at: '', done: false, message: { role: 'assistant', content: '', ...message }, ...extra });
    m = applyChunk(m, chunk({}), 5); // an empty chunk is not the first token
    expect(m.stats?.ttftMs).toBeUndefined();
    m = applyChunk(m, chunk({ thinking: 'hmm ' }), 40);
    m = applyChunk(m, chunk({ content: 'Hel' }), 50);
    m = applyChunk(m, chunk({ content: 'lo', thinking: 'ok' }), 60);
    m = applyChunk(m, chunk({ tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }] }), 70);
    m = applyChunk(m, chunk({}, { done: true, done_reason: 'stop', eval_count: 20, eval_duration: 4e8, prompt_eval_count: 9 }), 80);
    expect(m.content).toBe('Hello');
    expect(m.thinking).toBe('hmm ok');
    expect(m.tool_calls).toHaveLength(1);
    expect(m.stats).toMatchObject({ ttftMs: 40, evalCount: 20, promptEvalCount: 9, doneReason: 'stop' });
    expect(tokensPerSecond(m.stats)).toBeCloseTo(50);
  });

  it('has no rate without a duration', () => {
    expect(tokensPerSecond({ evalCount: 3 })).toBeUndefined();
    expect(tokensPerSecond(undefined)).toBeUndefined();
  });
});

describe('titleFrom', () => {
  it('uses the first line, shortened', () => {
    expect(titleFrom('  Hello there\nsecond')).toBe('Hello there');
    expect(titleFrom('x'.repeat(60))).toHaveLength(48);
    expect(titleFrom('   ')).toBe('New chat');
  });
});
