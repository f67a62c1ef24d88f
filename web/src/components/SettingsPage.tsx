import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { normaliseServerUrl, settings, type Theme } from '../lib/settings';
import { useStore } from '../lib/store';

export function SettingsPage() {
  const s = useStore(settings);
  const [url, setUrl] = useState(s.serverUrl);
  const [key, setKey] = useState(s.apiKey);
  const [note, setNote] = useState('');
  const [error, setError] = useState('');

  const save = async () => {
    setNote('');
    setError('');
    let serverUrl: string;
    try {
      serverUrl = normaliseServerUrl(url);
    } catch {
      setError(`“${url}” is not a server address`);
      return;
    }
    settings.set({ ...settings.get(), serverUrl, apiKey: key.trim() });
    setUrl(serverUrl);
    try {
      const v = await api.version();
      setNote(`Connected (Ollama API ${v.version})`);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  return (
    <div class="stack gap narrow">
      <h1>Settings</h1>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label class="stack">
          Server address
          <input
            value={url}
            placeholder={`${location.origin} (this page's server)`}
            onInput={(e) => setUrl(e.currentTarget.value)}
            aria-describedby="url-help"
          />
        </label>
        <small id="url-help" class="muted">
          Empty uses the server that served this page. Another server must allow this page's origin
          (OLLAMA_ORIGINS).
        </small>
        <label class="stack">
          API key
          <input
            type="password"
            autocomplete="off"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
            aria-describedby="key-help"
          />
        </label>
        <small id="key-help" class="muted">
          Sent as “Authorization: Bearer …” to servers that ask for one.
        </small>
        <div class="row end">
          <button class="primary" type="submit">
            Save and test
          </button>
        </div>
      </form>
      {note && <p role="status">{note}</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <fieldset>
        <legend>Theme</legend>
        {(['system', 'light', 'dark'] as Theme[]).map((t) => (
          <label class="check">
            <input
              type="radio"
              name="theme"
              checked={s.theme === t}
              onChange={() => settings.set({ ...settings.get(), theme: t })}
            />
            {t === 'system' ? 'Follow the system' : t[0]!.toUpperCase() + t.slice(1)}
          </label>
        ))}
      </fieldset>
      <section>
        <h2>Keyboard</h2>
        <dl class="keys">
          <dt>Enter</dt>
          <dd>Send</dd>
          <dt>Shift+Enter</dt>
          <dd>New line</dd>
          <dt>Esc</dt>
          <dd>Stop the reply</dd>
          <dt>Alt+N</dt>
          <dd>New chat</dd>
          <dt>Ctrl+K</dt>
          <dd>Search chats</dd>
        </dl>
      </section>
    </div>
  );
}
