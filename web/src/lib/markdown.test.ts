// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { renderMarkdown } from './markdown';

function dom(html: string): HTMLElement {
  const d = document.createElement('div');
  d.innerHTML = html;
  return d;
}

describe('renderMarkdown', () => {
  it('renders markdown structure', () => {
    const d = dom(renderMarkdown('# Title\n\n**bold** and `code`\n\n- a\n- b'));
    expect(d.querySelector('h1')?.textContent).toBe('Title');
    expect(d.querySelector('strong')?.textContent).toBe('bold');
    expect(d.querySelector('code')?.textContent).toBe('code');
    expect(d.querySelectorAll('li')).toHaveLength(2);
  });

  it('never lets raw HTML from a model through', () => {
    const evil = [
      '<script>window.pwned=1</script>',
      '<img src=x onerror="window.pwned=1">',
      '<iframe src="https://example.com"></iframe>',
      '<a href="javascript:alert(1)">x</a>',
      '<svg><script>alert(1)</script></svg>',
      '<style>body{display:none}</style>',
    ].join('\n\n');
    const d = dom(renderMarkdown(evil));
    expect(d.querySelector('script, img, iframe, svg, style')).toBeNull();
    expect(d.querySelector('[onerror]')).toBeNull();
    // The text is shown escaped, as the model wrote it.
    expect(d.textContent).toContain('<script>window.pwned=1</script>');
  });

  it('drops dangerous link targets and opens safe links elsewhere', () => {
    const d = dom(renderMarkdown('[a](javascript:alert(1)) [b](data:text/html,hi) [c](https://example.com/x)'));
    const links = [...d.querySelectorAll('a')];
    expect(links.map((a) => a.getAttribute('href'))).toEqual(['https://example.com/x']);
    expect(links[0]?.getAttribute('target')).toBe('_blank');
    expect(links[0]?.getAttribute('rel')).toBe('noopener noreferrer');
  });

  it('keeps image markdown from loading remote content via attributes', () => {
    const d = dom(renderMarkdown('![x](https://example.com/a.png "t\\" onerror=\\"alert(1)")'));
    for (const el of d.querySelectorAll('*')) expect(el.getAttribute('onerror')).toBeNull();
  });

  it('highlights known languages and escapes unknown ones', () => {
    const py = dom(renderMarkdown('```python\ndef f(x):\n    return "<b>"\n```'));
    const code = py.querySelector('pre > code.language-python');
    expect(code).not.toBeNull();
    expect(code?.querySelector('.hljs-keyword')?.textContent).toBe('def');
    expect(code?.textContent).toContain('return "<b>"');
    expect(py.querySelector('b')).toBeNull();
    const other = dom(renderMarkdown('```brainfuck\n<b>++</b>\n```'));
    expect(other.querySelector('pre code')?.textContent).toBe('<b>++</b>\n');
    expect(other.querySelector('pre b')).toBeNull();
  });

  it('renders an unterminated fence while a reply streams', () => {
    const d = dom(renderMarkdown('Here:\n```js\nconst a = 1;'));
    expect(d.querySelector('pre code')?.textContent).toContain('const a = 1;');
  });

  it('marks $…$, $$…$$, \\(…\\) and \\[…\\] as maths, keeping the TeX away from markdown', () => {
    const d = dom(renderMarkdown('Euler: $e^{i\\pi} + 1 = 0$ and \\(a_1 * b_2 * c\\).\n\n$$\n\\sum_{k=1}^n k\n$$\n\n\\[ x_1 \\]\n\nIt costs $5 or $10.'));
    const inline = [...d.querySelectorAll('span.math.math-inline')].map((e) => e.textContent);
    const display = [...d.querySelectorAll('div.math.math-display')].map((e) => e.textContent);
    expect(inline).toEqual(['e^{i\\pi} + 1 = 0', 'a_1 * b_2 * c']);
    expect(display).toEqual(['\\sum_{k=1}^n k', 'x_1']);
    expect(d.querySelector('em')).toBeNull(); // the * and _ stayed TeX
    expect(d.textContent).toContain('It costs $5 or $10.'); // prices are not maths
    const code = dom(renderMarkdown('`$x$` and\n\n```\n$$y$$\n```'));
    expect(code.querySelector('.math')).toBeNull();
  });

  it('never lets HTML through inside maths either', () => {
    const d = dom(renderMarkdown('$<img src=x onerror="window.pwned=1">$ $$<script>alert(1)</script>$$'));
    expect(d.querySelector('img, script')).toBeNull();
    expect(d.querySelector('.math')?.textContent).toBe('<img src=x onerror="window.pwned=1">');
  });
});

