import { describe, expect, it } from 'vitest';
import { contentWithFiles, decodeText, estimateTokens, kindOf, readAttachment, wrapFile } from './attachments';
import { buildChatRequest } from './chat';
import { newConversation } from './storage';

describe('attachments', () => {
  it('estimates tokens: ~4 ASCII characters a token, one per other character', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('abcd'.repeat(100))).toBe(100);
    expect(estimateTokens('日本語')).toBe(3);
    expect(estimateTokens('😀')).toBe(1); // a surrogate pair is one character
  });

  it('tells PDFs, images and text apart', () => {
    expect(kindOf({ name: 'a.PDF', type: '' })).toBe('pdf');
    expect(kindOf({ name: 'x', type: 'application/pdf' })).toBe('pdf');
    expect(kindOf({ name: 'p.png', type: 'image/png' })).toBe('image');
    expect(kindOf({ name: 'main.rs', type: '' })).toBe('text');
  });

  it('refuses binary and non-UTF-8 files by name', () => {
    expect(decodeText('a.txt', new TextEncoder().encode('héllo'))).toBe('héllo');
    expect(() => decodeText('a.bin', new Uint8Array([65, 0, 66]))).toThrow('a.bin is not a text file');
    expect(() => decodeText('b.txt', new Uint8Array([0xff, 0xfe, 0x41]))).toThrow('b.txt is not UTF-8 text');
  });

  it('puts file text ahead of the message, tagged with the file name', () => {
    const f = { name: 'a "b".txt', kind: 'text' as const, size: 3, text: 'one\ntwo\n\n' };
    expect(wrapFile(f)).toBe('<file name="a &quot;b&quot;.txt">\none\ntwo\n</file>');
    expect(contentWithFiles({ content: 'Summarise', files: [f] })).toBe(`${wrapFile(f)}\n\nSummarise`);
    expect(contentWithFiles({ content: '', files: [f] })).toBe(wrapFile(f));
    const req = buildChatRequest(newConversation('m'), [{ id: '1', role: 'user', content: 'Q', files: [f] }]);
    expect(req.messages[0]).toEqual({ role: 'user', content: `${wrapFile(f)}\n\nQ` });
  });

  it('reads text files and refuses images for a model without vision', async () => {
    const txt = new File(['print("hi")\n'], 'hello.py', { type: 'text/x-python' });
    expect(await readAttachment(txt, false, 'tiny')).toEqual({
      file: { name: 'hello.py', kind: 'text', size: 12, text: 'print("hi")\n' },
    });
    const png = new File([new Uint8Array([137, 80, 78, 71])], 'cat.png', { type: 'image/png' });
    await expect(readAttachment(png, false, 'tiny')).rejects.toThrow('tiny cannot read images');
  });
});
