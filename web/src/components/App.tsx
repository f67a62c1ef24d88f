import { useEffect, useState } from 'preact/hooks';
import { connection, serverLabel } from '../api/client';
import { settings } from '../lib/settings';
import { useStore } from '../lib/store';
import { loadChats } from '../state/chats';
import { refreshModels } from '../state/models';
import { href, route, type Page } from '../state/route';
import { ChatPage } from './ChatPage';
import { ConfirmHost } from './ConfirmHost';
import { EnginePage } from './EnginePage';
import { ModelsPage } from './ModelsPage';
import { RunningPage } from './RunningPage';
import { SettingsPage } from './SettingsPage';

const nav: { page: Page; label: string }[] = [
  { page: 'chat', label: 'Chat' },
  { page: 'models', label: 'Models' },
  { page: 'running', label: 'Running' },
  { page: 'engine', label: 'Engine' },
  { page: 'settings', label: 'Settings' },
];

function ConnectionBanner() {
  const c = useStore(connection);
  if (c.state === 'ok') return null;
  return (
    <div class={`banner ${c.state}`} role="alert">
      {c.state === 'lost' ? (
        <>Connection to the server at {serverLabel()} lost. Retrying every 2 seconds…</>
      ) : (
        <>
          The server asks for an API key. <a href={href({ page: 'settings' })}>Enter it in Settings</a>.
        </>
      )}
    </div>
  );
}

export function App() {
  const r = useStore(route);
  const s = useStore(settings);
  const c = useStore(connection);
  const [drawer, setDrawer] = useState(false);

  useEffect(() => {
    void loadChats();
  }, []);
  useEffect(() => {
    void refreshModels();
  }, [c.epoch]);
  useEffect(() => {
    if (s.theme === 'system') document.documentElement.removeAttribute('data-theme');
    else document.documentElement.setAttribute('data-theme', s.theme);
  }, [s.theme]);
  useEffect(() => setDrawer(false), [r.page, r.id]);

  return (
    <div class="app">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        {r.page === 'chat' && (
          <button
            class="icon menu"
            aria-label="Conversations"
            aria-expanded={drawer}
            aria-controls="sidebar"
            onClick={() => setDrawer(!drawer)}
          >
            ☰
          </button>
        )}
        <span class="brand">vkllm</span>
        <nav aria-label="Main">
          {nav.map((n) => (
            <a href={href({ page: n.page })} aria-current={r.page === n.page ? 'page' : undefined}>
              {n.label}
            </a>
          ))}
        </nav>
      </header>
      <ConnectionBanner />
      {r.page === 'chat' && <ChatPage id={r.id} drawer={drawer} closeDrawer={() => setDrawer(false)} />}
      {r.page !== 'chat' && (
        <main id="main" class="page" tabIndex={-1}>
          {r.page === 'models' && <ModelsPage />}
          {r.page === 'running' && <RunningPage />}
          {r.page === 'engine' && <EnginePage />}
          {r.page === 'settings' && <SettingsPage />}
        </main>
      )}
      <ConfirmHost />
    </div>
  );
}
