// Hash routes (#/chat/<id>, #/models, #/running, #/engine, #/settings): they work wherever the
// UI is mounted and survive reloads without server-side routing.
import { Store } from '../lib/store';

export type Page = 'chat' | 'models' | 'running' | 'engine' | 'settings';
export interface Route {
  page: Page;
  id?: string;
}

const pages: Page[] = ['chat', 'models', 'running', 'engine', 'settings'];

export function parseHash(hash: string): Route {
  const [page, id] = hash.replace(/^#\/?/, '').split('/');
  if (pages.includes(page as Page)) return { page: page as Page, id: id ? decodeURIComponent(id) : undefined };
  return { page: 'chat' };
}

export function href(r: Route): string {
  return `#/${r.page}${r.id ? `/${encodeURIComponent(r.id)}` : ''}`;
}

export const route = new Store<Route>(parseHash(location.hash));
addEventListener('hashchange', () => route.set(parseHash(location.hash)));

export function navigate(r: Route, replace = false): void {
  const h = href(r);
  if (replace) history.replaceState(null, '', h);
  else if (location.hash !== h) history.pushState(null, '', h);
  route.set(r);
}
