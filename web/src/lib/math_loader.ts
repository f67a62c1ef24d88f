// Loads the maths chunk (lib/math.ts) the first time a reply contains LaTeX; afterwards
// typesetting is synchronous, so streamed replies do not flash their TeX source.
type MathModule = typeof import('./math');

let loaded: MathModule | undefined;
let loading: Promise<MathModule> | undefined;

export function typesetMath(root: HTMLElement): void {
  if (!root.querySelector('.math:not([data-typeset])')) return;
  if (loaded) {
    loaded.typeset(root);
    return;
  }
  loading ??= import('./math').then((m) => (loaded = m));
  loading.then(
    (m) => root.isConnected && m.typeset(root),
    () => {
      loading = undefined; // the source text stays readable; try again with the next reply
    },
  );
}
