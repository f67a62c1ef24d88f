// How much of the model's context window a conversation fills. The server counts the prompt it
// built for the last reply (prompt_eval_count, the full prompt even when the KV cache served part
// of it) and the tokens it generated (eval_count); the next request holds both. The window is
// the num_ctx the model runs with: the conversation's own setting, else the model's num_ctx
// parameter, else what the loaded instance reports (/api/ps), else the model's trained length.
import type { RunningModel, ShowResponse } from '../api/types';
import type { StoredMessage } from './storage';

export interface ContextWindow {
  tokens: number;
  source: string; // for the meter's title
}

export function trainedContext(show: ShowResponse | undefined): number | undefined {
  const mi = show?.model_info ?? {};
  const arch = mi['general.architecture'];
  const v = typeof arch === 'string' ? mi[`${arch}.context_length`] : undefined;
  return typeof v === 'number' && v > 0 ? v : undefined;
}

// "num_ctx 8192" in /api/show's parameters text.
export function numCtxParameter(show: ShowResponse | undefined): number | undefined {
  const m = /^num_ctx\s+(\d+)\s*$/m.exec(show?.parameters ?? '');
  return m ? Number(m[1]) : undefined;
}

export function contextWindow(
  numCtxOption: number | undefined,
  show: ShowResponse | undefined,
  running: RunningModel | undefined,
): ContextWindow | undefined {
  if (numCtxOption && numCtxOption > 0) return { tokens: numCtxOption, source: 'num_ctx set in Parameters' };
  const param = numCtxParameter(show);
  if (param) return { tokens: param, source: "the model's num_ctx parameter" };
  if (running?.context_length) return { tokens: running.context_length, source: 'the loaded model' };
  const trained = trainedContext(show);
  if (trained) return { tokens: trained, source: "the model's context length" };
  return undefined;
}

// Tokens the conversation holds: the last reply's prompt plus what it generated.
export function usedTokens(path: StoredMessage[]): number | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const s = path[i]!.stats;
    if (path[i]!.role === 'assistant' && s?.promptEvalCount !== undefined)
      return s.promptEvalCount + (s.evalCount ?? 0);
  }
  return undefined;
}
