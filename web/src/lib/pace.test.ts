import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pacer } from './pace';

describe('pacer', () => {
  let clock = 0; // what the pacer reads as the time; an update "costs" by moving it on
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 0;
  });
  afterEach(() => vi.useRealTimers());
  const now = () => clock;
  const advance = (ms: number) => {
    clock += ms;
    vi.advanceTimersByTime(ms);
  };

  it('shows cheap changes about every 40 ms, folding the ones in between', () => {
    const times: number[] = [];
    const p = pacer(() => times.push(clock), { now });
    for (let t = 0; t < 400; t += 5) {
      p.request();
      advance(5);
    }
    expect(times.length).toBeGreaterThanOrEqual(8);
    expect(times.length).toBeLessThanOrEqual(10);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(40);
  });

  it('waits twice as long as an update took before the next, so updates take at most a third of the time', () => {
    const times: number[] = [];
    const p = pacer(
      () => {
        times.push(clock);
        clock += 300; // rendering this update blocked the page for 300 ms
      },
      { now },
    );
    for (let t = 0; t < 6000; t += 10) {
      p.request();
      advance(10);
    }
    expect(times.length).toBeGreaterThanOrEqual(5);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(900);
    const busy = times.length * 300;
    expect(busy / clock).toBeLessThanOrEqual(1 / 3 + 0.05); // the page was free the rest of the time
  });

  it('shows nothing without a change, and nothing after cancel', () => {
    const update = vi.fn();
    const p = pacer(update, { now });
    advance(1000);
    expect(update).not.toHaveBeenCalled();
    p.request();
    advance(50);
    expect(update).toHaveBeenCalledTimes(1);
    advance(1000); // no new change: no new update
    expect(update).toHaveBeenCalledTimes(1);
    p.request();
    p.cancel();
    advance(1000);
    expect(update).toHaveBeenCalledTimes(1);
    p.request(); // usable again after cancel
    advance(50);
    expect(update).toHaveBeenCalledTimes(2);
  });
});
