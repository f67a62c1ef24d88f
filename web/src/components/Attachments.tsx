import { fileTokens, type ImageAttachment } from '../lib/attachments';
import { formatBytes } from '../lib/format';
import type { FileAttachment } from '../lib/storage';

const fmt = new Intl.NumberFormat('en');
export const tokensText = (n: number) => `≈${fmt.format(n)} tokens`;

function describeFile(f: FileAttachment): string {
  const kind = f.kind === 'pdf' ? `PDF${f.pages ? `, ${f.pages} page${f.pages === 1 ? '' : 's'}` : ''}` : 'text';
  return `${kind} · ${formatBytes(f.size)} ·`;
}

// Attached files as chips: on a sent message (read-only) or in the composer (removable).
export function FileChips(props: {
  files: FileAttachment[];
  images?: ImageAttachment[];
  onRemoveFile?: (i: number) => void;
  onRemoveImage?: (i: number) => void;
}) {
  const { files, images = [] } = props;
  if (!files.length && !images.length) return null;
  return (
    <ul class="chips" aria-label="Attachments">
      {files.map((f, i) => (
        <li class="chip" title={f.text.slice(0, 400)}>
          <span class="chip-icon" aria-hidden="true">
            {f.kind === 'pdf' ? 'PDF' : 'TXT'}
          </span>
          <span class="chip-name">{f.name}</span>
          <span class="chip-meta">{describeFile(f)}</span>
          <span class="chip-tokens">{tokensText(fileTokens(f))}</span>
          {props.onRemoveFile && (
            <button type="button" class="icon small" aria-label={`Remove ${f.name}`} onClick={() => props.onRemoveFile!(i)}>
              ×
            </button>
          )}
        </li>
      ))}
      {images.map((img, i) => (
        <li class="chip">
          <img class="chip-thumb" src={`data:image/*;base64,${img.base64}`} alt="" />
          <span class="chip-name">{img.name}</span>
          <span class="chip-meta">image · {formatBytes(img.size)}</span>
          {props.onRemoveImage && (
            <button type="button" class="icon small" aria-label={`Remove ${img.name}`} onClick={() => props.onRemoveImage!(i)}>
              ×
            </button>
          )}
        </li>
      ))}
    </ul>
  );
}
