import { describe, expect, it } from 'vitest';
import type { RunningModel, ShowResponse } from '../api/types';
import { contextWindow, numCtxParameter, trainedContext, usedTokens } from './context';

const show: ShowResponse = {
  parameters: 'temperature 0.7\nnum_ctx 8192\nstop "</s>"',
  model_info: { 'general.architecture': 'llama', 'llama.context_length': 131072 },
};
const loaded = { name: 'm', context_length: 4096 } as RunningModel;

describe('context window', () => {
  it('reads the trained length and the num_ctx parameter from /api/show', () => {
    expect(trainedContext(show)).toBe(131072);
    expect(numCtxParameter(show)).toBe(8192);
    expect(numCtxParameter({ parameters: 'num_ctx_x 5' })).toBeUndefined();
    expect(trainedContext(undefined)).toBeUndefined();
  });

  it('prefers the conversation setting, then the parameter, the loaded instance, the trained length', () => {
    expect(contextWindow(2048, show, loaded)?.tokens).toBe(2048);
    expect(contextWindow(undefined, show, loaded)?.tokens).toBe(8192);
    const noParam = { ...show, parameters: '' };
    expect(contextWindow(undefined, noParam, loaded)).toEqual({ tokens: 4096, source: 'the loaded model' });
    expect(contextWindow(undefined, noParam, undefined)?.tokens).toBe(131072);
    expect(contextWindow(undefined, undefined, undefined)).toBeUndefined();
  });

  it("counts the last reply's prompt and output", () => {
    expect(usedTokens([])).toBeUndefined();
    expect(
      usedTokens([
        { id: '1', role: 'user', content: 'a' },
        { id: '2', role: 'assistant', content: 'b', stats: { promptEvalCount: 30, evalCount: 12 } },
        { id: '3', role: 'user', content: 'c' },
        { id: '4', role: 'assistant', content: '', error: 'boom' },
      ]),
    ).toBe(42);
  });
});
