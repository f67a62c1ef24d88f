// Model output → safe HTML. markdown-it never passes raw HTML through (html: false) and
// DOMPurify sanitises what it produces anyway, so neither a prompt-injected <script> nor a
// javascript: link can reach the page. Code blocks are highlighted with a few common languages.
// LaTeX ($…$, $$…$$, \(…\), \[…\]) is found here, at parse time, so markdown never mangles it
// (`_` and `*` stay TeX), and left as its source text in a .math element; lib/math.ts typesets
// those with KaTeX once that chunk has loaded.
import { tex } from '@mdit/plugin-tex';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

const languages = { bash, c, cpp, css, go, java, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(languages)) hljs.registerLanguage(name, lang);
hljs.registerAliases(['sh', 'shell', 'zsh'], { languageName: 'bash' });
hljs.registerAliases(['js', 'jsx', 'mjs'], { languageName: 'javascript' });
hljs.registerAliases(['ts', 'tsx'], { languageName: 'typescript' });
hljs.registerAliases(['py'], { languageName: 'python' });
hljs.registerAliases(['html', 'svg'], { languageName: 'xml' });
hljs.registerAliases(['c++', 'h', 'hpp', 'cc'], { languageName: 'cpp' });
hljs.registerAliases(['rs'], { languageName: 'rust' });
hljs.registerAliases(['yml'], { languageName: 'yaml' });

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code, lang) {
    const name = lang.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const body =
      name && hljs.getLanguage(name)
        ? hljs.highlight(code, { language: name, ignoreIllegals: true }).value
        : escapeHtml(code);
    const cls = name ? ` class="hljs language-${escapeHtml(name)}"` : ' class="hljs"';
    return `<pre><code${cls}>${body}</code></pre>`;
  },
});

md.use(tex, {
  delimiters: 'all',
  render: (content: string, display: boolean) =>
    display
      ? `<div class="math math-display">${escapeHtml(content.trim())}</div>`
      : `<span class="math math-inline">${escapeHtml(content)}</span>`,
});

let hooked = false;
function purify(html: string): string {
  if (!hooked) {
    // Links from a model open elsewhere and tell the target nothing about this page.
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A' && node.hasAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
    hooked = true;
  }
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe'],
    FORBID_ATTR: ['style'],
  });
}

export function renderMarkdown(text: string): string {
  return purify(md.render(text));
}
