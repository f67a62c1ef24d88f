// One modal confirmation at a time (a native <dialog>, so focus is trapped and Esc cancels).
import { Store } from '../lib/store';

export interface ConfirmRequest {
  message: string;
  confirmLabel: string;
  resolve: (ok: boolean) => void;
}

export const pendingConfirm = new Store<ConfirmRequest | null>(null);

export function confirmDialog(message: string, confirmLabel = 'Delete'): Promise<boolean> {
  pendingConfirm.get()?.resolve(false);
  return new Promise((resolve) => {
    pendingConfirm.set({
      message,
      confirmLabel,
      resolve: (ok) => {
        pendingConfirm.set(null);
        resolve(ok);
      },
    });
  });
}
