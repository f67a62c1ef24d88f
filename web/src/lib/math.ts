// Typesets the .math placeholders lib/markdown.ts leaves (their text is the TeX source) with
// KaTeX. This module, KaTeX and its stylesheet and fonts are one lazily loaded chunk; the fonts
// are assets of this bundle. KaTeX runs with trust off (no \href, \url, \htmlClass, \includegraphics
// and the like), and what it writes is sanitised again before it reaches the page.
import DOMPurify from 'dompurify';
import katex from 'katex';
import 'katex/dist/katex.min.css';

const cache = new Map<string, string>();

export function renderTex(source: string, display: boolean): string {
  const key = `${display ? 'D' : 'I'}${source}`;
  let html = cache.get(key);
  if (html === undefined) {
    const raw = katex.renderToString(source, {
      displayMode: display,
      throwOnError: false, // a typo shows as source text in the theme's error colour, not an exception
      errorColor: 'var(--danger)',
      trust: false,
      strict: 'ignore',
      maxExpand: 500,
      output: 'htmlAndMathml', // MathML for screen readers, HTML for the eye
    });
    // KaTeX's layout needs inline styles; MathML's semantics/annotation carry the source.
    html = DOMPurify.sanitize(raw, { ADD_TAGS: ['semantics', 'annotation'], ADD_ATTR: ['encoding'] });
    if (cache.size > 2000) cache.clear();
    cache.set(key, html);
  }
  return html;
}

export function typeset(root: HTMLElement): void {
  for (const el of root.querySelectorAll<HTMLElement>('.math:not([data-typeset])')) {
    const display = el.classList.contains('math-display');
    el.innerHTML = renderTex(el.textContent ?? '', display);
    el.setAttribute('data-typeset', '');
  }
}
