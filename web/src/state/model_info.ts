// What the chat needs to know about a model beyond /api/tags: /api/show (capabilities, context
// length, parameters), fetched once per model, and the loaded instances (/api/ps), refreshed
// when a reply ends.
import { api } from '../api/client';
import type { RunningModel, ShowResponse } from '../api/types';
import { Store } from '../lib/store';

export const shown = new Store<Readonly<Record<string, ShowResponse>>>({});
export const running = new Store<RunningModel[]>([]);
const asked = new Set<string>();

export function loadShow(model: string): void {
  if (!model || asked.has(model)) return;
  asked.add(model);
  api.show(model).then(
    (s) => shown.set({ ...shown.get(), [model]: s }),
    () => asked.delete(model), // asked again next time (the model may be pulled meanwhile)
  );
}

export async function refreshRunning(): Promise<void> {
  try {
    running.set(await api.ps());
  } catch {
    // the connection banner says what is wrong; the meter keeps what it knew
  }
}

export function runningModel(list: RunningModel[], model: string): RunningModel | undefined {
  return list.find((m) => m.name === model || m.model === model);
}
