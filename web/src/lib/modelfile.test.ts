import { describe, expect, it } from 'vitest';
import { modelfileToRequest } from './modelfile';
import { foldProgress } from './progress';

describe('modelfileToRequest', () => {
  it('gathers a Modelfile into /api/create fields', () => {
    const text = `# comment
FROM llama3.2:1b
PARAMETER temperature 0.5
PARAMETER stop "<|end|>"
parameter stop </s>
PARAMETER num_ctx 4096
SYSTEM """You are
a pirate."""
TEMPLATE "{{ .Prompt }}"
LICENSE MIT
MESSAGE user hello
MESSAGE assistant """ahoy
there"""
`;
    expect(modelfileToRequest('pirate', text)).toEqual({
      model: 'pirate',
      from: 'llama3.2:1b',
      parameters: { temperature: 0.5, stop: ['<|end|>', '</s>'], num_ctx: 4096 },
      system: 'You are\na pirate.',
      template: '{{ .Prompt }}',
      license: ['MIT'],
      messages: [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'ahoy\nthere' },
      ],
    });
  });

  it('says what is wrong, with the line', () => {
    expect(() => modelfileToRequest('x', 'SYSTEM hi')).toThrow('needs a FROM line');
    expect(() => modelfileToRequest('x', 'FROM a\nBOGUS 1')).toThrow('line 2: unknown command "BOGUS"');
    expect(() => modelfileToRequest('x', 'FROM a\n\nSYSTEM """open')).toThrow('line 3: unterminated """');
    expect(() => modelfileToRequest('x', 'FROM ./model.gguf')).toThrow('FROM a file needs the CLI');
    expect(() => modelfileToRequest('x', 'FROM a\nMESSAGE robot hi')).toThrow('line 2: MESSAGE role');
  });
});

describe('foldProgress', () => {
  it('keeps one bar per layer and the latest status', () => {
    let s = { status: '', layers: [] as ReturnType<typeof foldProgress>['layers'] };
    s = foldProgress(s, { status: 'pulling manifest' });
    s = foldProgress(s, { status: 'pulling aaa', digest: 'sha256:aaa', total: 100 });
    s = foldProgress(s, { status: 'pulling bbb', digest: 'sha256:bbb', total: 10, completed: 10 });
    s = foldProgress(s, { status: 'pulling aaa', digest: 'sha256:aaa', total: 100, completed: 60 });
    s = foldProgress(s, { status: 'verifying sha256 digest' });
    s = foldProgress(s, { status: 'success' });
    expect(s.status).toBe('success');
    expect(s.layers.map((l) => [l.digest, l.completed, l.total])).toEqual([
      ['sha256:aaa', 60, 100],
      ['sha256:bbb', 10, 10],
    ]);
  });
});
