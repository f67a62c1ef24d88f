// Installed models (/api/tags), shared by the chat's model picker and the models page.
import { api, ApiError } from '../api/client';
import type { TagModel } from '../api/types';
import { Store } from '../lib/store';

export const models = new Store<TagModel[]>([]);
export const modelsError = new Store<string>('');
export const modelsLoaded = new Store(false);

export async function refreshModels(): Promise<void> {
  try {
    models.set(await api.tags());
    modelsError.set('');
  } catch (e) {
    modelsError.set(e instanceof ApiError || e instanceof Error ? e.message : String(e));
  }
  modelsLoaded.set(true);
}

export function capabilitiesOf(name: string): string[] {
  return models.get().find((m) => m.name === name || m.model === name)?.capabilities ?? [];
}
