import { useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import { renderMarkdown } from '../lib/markdown';
import { typesetMath } from '../lib/math_loader';

async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (plain http on another host): the old way still works.
    const t = document.createElement('textarea');
    t.value = text;
    document.body.append(t);
    t.select();
    document.execCommand('copy');
    t.remove();
  }
}

// Sanitised markdown; every code block gets a Copy button (added after sanitising, so the
// sanitiser never has to allow buttons in model output), and LaTeX is typeset by KaTeX.
export function Markdown(props: { text: string }) {
  const html = useMemo(() => renderMarkdown(props.text), [props.text]);
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    for (const pre of ref.current?.querySelectorAll('pre') ?? []) {
      if (pre.parentElement?.classList.contains('code')) continue;
      const wrap = document.createElement('div');
      wrap.className = 'code';
      pre.replaceWith(wrap);
      const b = document.createElement('button');
      b.className = 'copy small';
      b.type = 'button';
      b.textContent = 'Copy';
      b.setAttribute('aria-label', 'Copy code');
      b.onclick = () =>
        void copyText(pre.textContent ?? '').then(() => {
          b.textContent = 'Copied';
          setTimeout(() => (b.textContent = 'Copy'), 1500);
        });
      wrap.append(b, pre);
    }
    if (ref.current) typesetMath(ref.current);
  }, [html]);
  return <div ref={ref} class="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

export { copyText };
