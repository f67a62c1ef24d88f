import { useEffect, useRef } from 'preact/hooks';
import { useStore } from '../lib/store';
import { pendingConfirm } from '../state/dialog';

export function ConfirmHost() {
  const req = useStore(pendingConfirm);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (req && !d.open) d.showModal();
    if (!req && d.open) d.close();
  }, [req]);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-text"
      onClose={() => pendingConfirm.get()?.resolve(false)}
    >
      <p id="confirm-text">{req?.message}</p>
      <div class="row end">
        <button onClick={() => req?.resolve(false)}>Cancel</button>
        <button class="danger" onClick={() => req?.resolve(true)}>
          {req?.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
