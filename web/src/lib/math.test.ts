// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown';
import { renderTex, typeset } from './math';

describe('KaTeX typesetting', () => {
  it('typesets the placeholders markdown leaves, keeping the source for screen readers', () => {
    const root = document.createElement('div');
    root.innerHTML = renderMarkdown('$\\frac{a}{b}$\n\n$$\\sqrt{x^2}$$');
    typeset(root);
    expect(root.querySelectorAll('.katex')).toHaveLength(2);
    expect(root.querySelector('.katex-display')).not.toBeNull();
    expect([...root.querySelectorAll('annotation')].map((a) => a.textContent)).toEqual(['\\frac{a}{b}', '\\sqrt{x^2}']);
    // Typesetting again leaves finished ones alone.
    const before = root.innerHTML;
    typeset(root);
    expect(root.innerHTML).toBe(before);
  });

  it('runs untrusted: no links, no classes or ids from the TeX, errors shown not thrown', () => {
    const html = renderTex('\\href{javascript:alert(1)}{x} \\url{https://example.com} \\htmlId{evil}{y}', false);
    const d = document.createElement('div');
    d.innerHTML = html;
    expect(d.querySelector('a')).toBeNull();
    expect(d.querySelector('#evil')).toBeNull();
    const broken = document.createElement('div');
    broken.innerHTML = renderTex('\\frac{', false);
    expect(broken.querySelector('.katex-error')).not.toBeNull();
  });
});
