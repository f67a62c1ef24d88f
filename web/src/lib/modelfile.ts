// A Modelfile typed into the UI → the JSON fields /api/create takes (§1.14; the server no longer
// accepts Modelfile text). FROM must name an installed or pullable model: the browser cannot
// hand the server a file path, the CLI (`vkllm create -f`) uploads local GGUFs.
import type { ChatMessage, CreateRequest } from '../api/types';

export class ModelfileError extends Error {}

const commands = new Set(['from', 'parameter', 'template', 'system', 'adapter', 'license', 'message', 'requires']);

// Reads a value: """multi-line""", "quoted" or the rest of the line.
function readValue(text: string, i: number, line: number): [string, number] {
  if (text.startsWith('"""', i)) {
    const end = text.indexOf('"""', i + 3);
    if (end < 0) throw new ModelfileError(`line ${line}: unterminated """`);
    return [text.slice(i + 3, end), end + 3];
  }
  const eol = text.indexOf('\n', i);
  const rest = text.slice(i, eol < 0 ? text.length : eol).trim();
  const next = eol < 0 ? text.length : eol;
  if (rest.length >= 2 && rest.startsWith('"') && rest.endsWith('"'))
    return [rest.slice(1, -1).replace(/\\"/g, '"'), next];
  return [rest, next];
}

function typed(v: string): unknown {
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}

export function modelfileToRequest(model: string, text: string): CreateRequest {
  const req: CreateRequest = { model };
  const parameters: Record<string, unknown> = {};
  const messages: ChatMessage[] = [];
  const licenses: string[] = [];
  let i = 0;
  let line = 1;
  const countLines = (a: number, b: number) => {
    for (let k = a; k < b; k++) if (text[k] === '\n') line++;
  };
  while (i < text.length) {
    const start = i;
    while (i < text.length && /[ \t\r\n]/.test(text[i] ?? '')) i++;
    countLines(start, i);
    if (i >= text.length) break;
    if (text[i] === '#') {
      const eol = text.indexOf('\n', i);
      i = eol < 0 ? text.length : eol;
      continue;
    }
    const word = /^[A-Za-z]+/.exec(text.slice(i))?.[0] ?? '';
    const cmd = word.toLowerCase();
    if (!commands.has(cmd)) throw new ModelfileError(`line ${line}: unknown command "${word || text[i]}"`);
    i += word.length;
    while (text[i] === ' ' || text[i] === '\t') i++;
    const at = line;
    let arg = '';
    if (cmd === 'parameter' || cmd === 'message') {
      const key = /^\S+/.exec(text.slice(i))?.[0] ?? '';
      if (!key || key.includes('\n')) throw new ModelfileError(`line ${at}: ${word} needs a name and a value`);
      i += key.length;
      while (text[i] === ' ' || text[i] === '\t') i++;
      const before = i;
      [arg, i] = readValue(text, i, at);
      countLines(before, i);
      if (cmd === 'parameter') {
        const k = key.toLowerCase();
        if (k === 'stop') parameters.stop = [...((parameters.stop as string[]) ?? []), arg];
        else parameters[k] = typed(arg);
      } else {
        const role = key.toLowerCase();
        if (!['system', 'user', 'assistant', 'tool'].includes(role))
          throw new ModelfileError(`line ${at}: MESSAGE role must be system, user, assistant or tool`);
        messages.push({ role: role as ChatMessage['role'], content: arg });
      }
      continue;
    }
    const before = i;
    [arg, i] = readValue(text, i, at);
    countLines(before, i);
    switch (cmd) {
      case 'from':
        if (/^(\.{0,2}\/|~|[A-Za-z]:\\)/.test(arg) || /\.(gguf|bin|safetensors)$/i.test(arg))
          throw new ModelfileError(
            `line ${at}: FROM a file needs the CLI (vkllm create -f); here FROM names a model`,
          );
        req.from = arg;
        break;
      case 'template':
        req.template = arg;
        break;
      case 'system':
        req.system = arg;
        break;
      case 'license':
        licenses.push(arg);
        break;
      case 'adapter':
        throw new ModelfileError(`line ${at}: ADAPTER needs the CLI (the adapter file is uploaded)`);
      case 'requires':
        break; // checked by the server when it creates from the CLI; nothing to send here
    }
  }
  if (!req.from) throw new ModelfileError('the Modelfile needs a FROM line naming a model');
  if (Object.keys(parameters).length) req.parameters = parameters;
  if (messages.length) req.messages = messages;
  if (licenses.length) req.license = licenses;
  return req;
}
