// The parts of Ollama's wire format (docs/ollama-compat.md §1) the UI reads and writes.

export interface ToolCall {
  id?: string;
  function: { index?: number; name: string; arguments: Record<string, unknown> };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  thinking?: string;
  images?: string[];
  tool_calls?: ToolCall[];
}

export interface Options {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repeat_penalty?: number;
  num_ctx?: number;
  num_predict?: number;
  seed?: number;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  think?: boolean;
  format?: string;
  options?: Options;
  keep_alive?: number | string;
}

export interface Timings {
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
  prompt_eval_duration?: number;
  eval_count?: number;
  eval_duration?: number;
}

export interface ChatChunk extends Timings {
  model: string;
  created_at: string;
  message?: { role: string; content: string; thinking?: string; tool_calls?: ToolCall[] };
  done: boolean;
  done_reason?: string;
}

export interface ModelDetails {
  parent_model?: string;
  format?: string;
  family?: string;
  families?: string[] | null;
  parameter_size?: string;
  quantization_level?: string;
  context_length?: number;
  embedding_length?: number;
}

export interface TagModel {
  name: string;
  model: string;
  modified_at: string;
  size: number;
  digest: string;
  details: ModelDetails;
  capabilities?: string[];
}

export interface ShowResponse {
  license?: string;
  modelfile?: string;
  parameters?: string;
  template?: string;
  system?: string;
  details?: ModelDetails;
  messages?: ChatMessage[];
  model_info?: Record<string, unknown>;
  capabilities?: string[];
  modified_at?: string;
}

export interface RunningModel {
  name: string;
  model: string;
  size: number;
  size_vram: number;
  digest: string;
  details?: ModelDetails;
  expires_at: string;
  context_length?: number;
}

export interface ProgressLine {
  status?: string;
  digest?: string;
  total?: number;
  completed?: number;
}

export interface CreateRequest {
  model: string;
  from?: string;
  template?: string;
  system?: string;
  license?: string[];
  parameters?: Record<string, unknown>;
  messages?: ChatMessage[];
  quantize?: string;
  stream?: boolean;
}
