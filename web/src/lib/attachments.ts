// Files a person attaches to a message: text and source files are read as UTF-8, PDFs have their
// text extracted in the browser (lib/pdf_text.ts, loaded only when a PDF arrives), images go to
// vision models as base64 (Ollama's `images`). Their text travels as context ahead of the message.
import type { FileAttachment, StoredMessage } from './storage';

export interface ImageAttachment {
  name: string;
  size: number;
  base64: string;
}

export const MAX_TEXT_FILE_BYTES = 8 << 20;
export const MAX_PDF_BYTES = 64 << 20;
export const MAX_IMAGE_BYTES = 20 << 20;

// A rough token count for text no tokenizer has seen: about four characters a token for
// ASCII (English prose and code with Llama-style vocabularies), one a character otherwise
// (CJK and the like are near that). Shown as an estimate ("≈"); the server's own count replaces
// it once a reply reports prompt_eval_count.
export function estimateTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 128) ascii++;
    else if (c < 0xdc00 || c > 0xdfff) other++; // a surrogate pair counts once
  }
  return Math.ceil(ascii / 4 + other);
}

export function fileTokens(f: FileAttachment): number {
  return estimateTokens(wrapFile(f));
}

const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

// How one file is put in front of the model: tagged with its name, so a question can refer to it.
export function wrapFile(f: FileAttachment): string {
  return `<file name="${attr(f.name)}">\n${f.text.replace(/\s+$/, '')}\n</file>`;
}

// The message text the model sees: attached files first, then what the person wrote.
export function contentWithFiles(m: Pick<StoredMessage, 'content' | 'files'>): string {
  if (!m.files?.length) return m.content;
  return [...m.files.map(wrapFile), m.content].filter((s) => s !== '').join('\n\n');
}

export type FileKind = 'pdf' | 'image' | 'text';

export function kindOf(file: { name: string; type: string }): FileKind {
  if (file.type === 'application/pdf' || /\.pdf$/i.test(file.name)) return 'pdf';
  if (file.type.startsWith('image/')) return 'image';
  return 'text';
}

// UTF-8 text or a clear refusal: a NUL byte or invalid UTF-8 means a binary file.
export function decodeText(name: string, bytes: Uint8Array): string {
  if (bytes.includes(0)) throw new Error(`${name} is not a text file`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${name} is not UTF-8 text`);
  }
}

function readAsBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error ?? new Error(`cannot read ${file.name}`));
    r.readAsDataURL(file);
  });
}

export type Read = { file: FileAttachment } | { image: ImageAttachment };

// Reads one dropped, pasted or chosen file. Throws an Error whose message the composer shows.
export async function readAttachment(file: File, vision: boolean, model: string): Promise<Read> {
  const kind = kindOf(file);
  const name = file.name || (kind === 'image' ? 'pasted image' : 'pasted text');
  if (kind === 'image') {
    if (!vision) throw new Error(`${model || 'This model'} cannot read images (it has no vision capability)`);
    if (file.size > MAX_IMAGE_BYTES) throw new Error(`${name} is larger than ${MAX_IMAGE_BYTES >> 20} MB`);
    return { image: { name, size: file.size, base64: await readAsBase64(file) } };
  }
  if (kind === 'pdf') {
    if (file.size > MAX_PDF_BYTES) throw new Error(`${name} is larger than ${MAX_PDF_BYTES >> 20} MB`);
    const { pdfText } = await import('./pdf_text');
    const { text, pages } = await pdfText(name, await file.arrayBuffer());
    return { file: { name, kind: 'pdf', size: file.size, text, pages } };
  }
  if (file.size > MAX_TEXT_FILE_BYTES) throw new Error(`${name} is larger than ${MAX_TEXT_FILE_BYTES >> 20} MB`);
  const text = decodeText(name, new Uint8Array(await file.arrayBuffer()));
  return { file: { name, kind: 'text', size: file.size, text } };
}
