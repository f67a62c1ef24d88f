// Pull/create progress lines (§1.2 ProgressResponse) folded into what the progress view shows.
import type { ProgressLine } from '../api/types';

export interface Layer {
  digest: string;
  status: string;
  total: number;
  completed: number;
}

// Folds pull/create progress lines into one bar per layer digest plus the latest status.
export function foldProgress(
  state: { status: string; layers: Layer[] },
  line: ProgressLine,
): { status: string; layers: Layer[] } {
  const status = line.status ?? state.status;
  if (!line.digest || !line.total) return { ...state, status };
  const layer: Layer = {
    digest: line.digest,
    status: line.status ?? '',
    total: line.total,
    completed: Math.min(line.completed ?? 0, line.total),
  };
  const i = state.layers.findIndex((l) => l.digest === line.digest);
  const layers = i < 0 ? [...state.layers, layer] : state.layers.map((l, k) => (k === i ? layer : l));
  return { status, layers };
}
