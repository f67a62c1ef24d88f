// Paces the updates of a view that costs more to show the bigger it grows: a streamed reply is
// rendered again in full (markdown, sanitising, highlighting, maths) each time it is shown, so a
// fixed update rate that suits a short reply would keep the page busy all the time once the
// reply is long, and the page would stop answering the user (Stop, links) until the stream ends.
//
// An update happens at most every `minGapMs`, and after an update that took R ms (measured to
// the start of the next task, so the views' re-render that the update schedules in a microtask
// counts) the next one waits `R * (1 / share - 1)` ms: showing the stream takes at most `share`
// of the page's time, however long it grows.

export interface Pacer {
  // Something changed: show it soon (at once if nothing is scheduled, never twice in a gap).
  request(): void;
  // Drop what is scheduled (the caller shows the final state itself).
  cancel(): void;
}

export function pacer(
  update: () => void,
  opts: { minGapMs?: number; share?: number; now?: () => number } = {},
): Pacer {
  const minGap = opts.minGapMs ?? 40;
  const share = opts.share ?? 1 / 3;
  const now = opts.now ?? (() => performance.now());
  let pending = false; // changes since the last update
  let timer: ReturnType<typeof setTimeout> | undefined; // the next update, or the measurement of the last

  const run = () => {
    pending = false;
    const start = now();
    update();
    timer = setTimeout(() => {
      const cost = now() - start;
      timer = setTimeout(
        () => {
          timer = undefined;
          if (pending) run();
        },
        Math.max(minGap, cost * (1 / share - 1)),
      );
    }, 0);
  };

  return {
    request() {
      pending = true;
      timer ??= setTimeout(() => {
        timer = undefined;
        run();
      }, minGap);
    },
    cancel() {
      pending = false;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
