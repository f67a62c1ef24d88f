import { useEffect, useRef } from 'preact/hooks';

// Calls `tick` now and every `ms` while the component is shown and the tab is visible; a slow
// server never gets overlapping calls.
export function usePoll(tick: () => Promise<void>, ms: number, deps: unknown[] = []): void {
  const fn = useRef(tick);
  fn.current = tick;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (stopped) return;
      if (document.visibilityState !== 'hidden') await fn.current().catch(() => undefined);
      if (!stopped) timer = setTimeout(run, ms);
    };
    void run();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, deps);
}
