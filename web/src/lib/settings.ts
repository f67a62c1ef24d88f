// UI settings, kept in localStorage: where the server is (empty = the origin that served the
// page), the API key for a server that asks for one, and the colour theme.
import { Store } from './store';

export type Theme = 'system' | 'light' | 'dark';

export interface Settings {
  serverUrl: string;
  apiKey: string;
  theme: Theme;
}

const KEY = 'vkllm.settings';
const defaults: Settings = { serverUrl: '', apiKey: '', theme: 'system' };

function load(): Settings {
  try {
    const raw = localStorage.getItem(KEY);
    if (raw) return { ...defaults, ...(JSON.parse(raw) as Partial<Settings>) };
  } catch {
    // Unreadable settings fall back to the defaults rather than breaking the page.
  }
  return { ...defaults };
}

export const settings = new Store<Settings>(load());

settings.subscribe((s) => {
  try {
    localStorage.setItem(KEY, JSON.stringify(s));
  } catch {
    // Storage full or disabled: the settings still apply for this session.
  }
});

// "http://host:port/" → "http://host:port"; "" stays "" (same origin).
export function normaliseServerUrl(url: string): string {
  const t = url.trim();
  if (t === '') return '';
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(t) ? t : `http://${t}`;
  const u = new URL(withScheme);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}
