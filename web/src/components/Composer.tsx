import { useRef, useState } from 'preact/hooks';
import { estimateTokens, fileTokens, readAttachment, type ImageAttachment } from '../lib/attachments';
import type { ContextWindow } from '../lib/context';
import type { FileAttachment } from '../lib/storage';
import { FileChips, tokensText } from './Attachments';

const fmt = new Intl.NumberFormat('en');

export interface Attachments {
  files: FileAttachment[];
  images: ImageAttachment[];
  error: string;
  reading: number;
  add: (list: Iterable<File>) => void;
  removeFile: (i: number) => void;
  removeImage: (i: number) => void;
  clear: () => void;
}

// Files waiting to go with the next message, and the last refusal (unreadable, too large, an
// image for a model without vision).
export function useAttachments(model: string, vision: boolean): Attachments {
  const [files, setFiles] = useState<FileAttachment[]>([]);
  const [images, setImages] = useState<ImageAttachment[]>([]);
  const [error, setError] = useState('');
  const [reading, setReading] = useState(0);
  const add = (list: Iterable<File>) => {
    setError('');
    for (const file of list) {
      setReading((n) => n + 1);
      readAttachment(file, vision, model)
        .then((r) => {
          if ('file' in r) setFiles((f) => [...f, r.file]);
          else setImages((i) => [...i, r.image]);
        })
        .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)))
        .finally(() => setReading((n) => n - 1));
    }
  };
  return {
    files,
    images,
    error,
    reading,
    add,
    removeFile: (i) => setFiles((f) => f.filter((_, k) => k !== i)),
    removeImage: (i) => setImages((x) => x.filter((_, k) => k !== i)),
    clear: () => {
      setFiles([]);
      setImages([]);
      setError('');
    },
  };
}

// What the next message would add to the context, and whether it can fit at all: the newest
// message is never dropped by the server, so one larger than the window is refused here.
export function pendingTokens(text: string, files: FileAttachment[]): number {
  return (text.trim() ? estimateTokens(text) : 0) + files.reduce((s, f) => s + fileTokens(f), 0);
}

export function ContextMeter(props: { used?: number; pending: number; ctxWindow?: ContextWindow }) {
  const w = props.ctxWindow;
  if (!w) return null;
  const used = props.used ?? 0;
  const total = used + props.pending;
  const title = `Context window ${fmt.format(w.tokens)} tokens (${w.source}); in use: the last reply's prompt and output`;
  return (
    <div class="ctx-meter" title={title}>
      <span class="ctx-label" aria-hidden="true">
        Context
      </span>
      <meter
        aria-label="Context used"
        min={0}
        max={w.tokens}
        value={Math.min(total, w.tokens)}
        low={w.tokens * 0.7}
        high={w.tokens * 0.9}
        optimum={0}
      />
      <span class="ctx-text">
        {fmt.format(used)}
        {props.pending ? ` + ≈${fmt.format(props.pending)}` : ''} / {fmt.format(w.tokens)}
        <span class="sr-only"> tokens of context</span>
      </span>
    </div>
  );
}

export function Composer(props: {
  model: string;
  vision: boolean;
  live: boolean;
  att: Attachments;
  text: string;
  setText: (t: string) => void;
  used?: number;
  ctxWindow?: ContextWindow;
  onSend: () => void;
  onStop: () => void;
  inputRef: { current: HTMLTextAreaElement | null };
}) {
  const { att, text, ctxWindow: w } = props;
  const fileRef = useRef<HTMLInputElement>(null);
  const pending = pendingTokens(text, att.files);
  const tooBig = !!w && pending > w.tokens;
  const dropsOld = !!w && !tooBig && (props.used ?? 0) + pending > w.tokens;
  const empty = !text.trim() && !att.files.length && !att.images.length;
  const canSend = !!props.model && !empty && !tooBig && att.reading === 0;
  const submit = () => canSend && !props.live && props.onSend();

  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <div class="composer-inner">
        <FileChips files={att.files} images={att.images} onRemoveFile={att.removeFile} onRemoveImage={att.removeImage} />
        {att.reading > 0 && (
          <p class="muted" role="status">
            Reading {att.reading} file{att.reading === 1 ? '' : 's'}…
          </p>
        )}
        {att.error && (
          <p class="error" role="alert">
            {att.error}
          </p>
        )}
        {tooBig && (
          <p class="error" role="alert">
            This message and its files come to {tokensText(pending)}, more than the {fmt.format(w.tokens)}-token
            context window ({w.source}), so they cannot be sent. Remove a file or raise num_ctx in Parameters.
          </p>
        )}
        {dropsOld && (
          <p class="warn" role="status">
            With this message the conversation passes the {fmt.format(w.tokens)}-token context window: the oldest
            messages will be left out of what the model sees.
          </p>
        )}
        <div class="composer-row">
          <button
            type="button"
            class="attach"
            title={props.vision ? 'Attach text, source, PDF or image files' : 'Attach text, source or PDF files'}
            onClick={() => fileRef.current?.click()}
          >
            Attach
          </button>
          <input
            ref={fileRef}
            type="file"
            multiple
            hidden
            aria-label="Attach files"
            onChange={(e) => {
              att.add([...(e.currentTarget.files ?? [])]);
              e.currentTarget.value = '';
            }}
          />
          <textarea
            ref={props.inputRef}
            id="composer"
            aria-label="Message"
            placeholder={props.model ? `Message ${props.model}` : 'Choose a model first'}
            rows={2}
            value={text}
            onInput={(e) => props.setText(e.currentTarget.value)}
            onPaste={(e) => {
              const files = [...(e.clipboardData?.files ?? [])];
              if (files.length) {
                e.preventDefault();
                att.add(files);
              }
            }}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                submit();
              }
            }}
          />
          {props.live ? (
            <button type="button" class="danger" onClick={props.onStop} title="Stop (Esc)">
              Stop
            </button>
          ) : (
            <button type="submit" class="primary" disabled={!canSend}>
              Send
            </button>
          )}
        </div>
      </div>
    </form>
  );
}
