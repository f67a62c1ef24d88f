// The chat features of web_e2e.mjs, in the same browser against the same server: attachments
// (picker, paste, drop; text, source, a PDF Chromium prints; images refused without vision), the
// refusal of a message larger than the context window, the context meter against /api/ps,
// maths typeset by KaTeX from an old (version 1) export, and versions of edited and regenerated
// messages surviving export and import. Screenshots in light and dark, desktop and phone width.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';

const fmt = new Intl.NumberFormat('en');

export async function chatFeatures({ page, context, base, shots, step, shot, checkA11y, nav, pulled, requests }) {
  const convs = page.getByRole('complementary', { name: 'Conversations' });
  const composer = page.getByLabel('Message', { exact: true });
  const modelSelect = page.getByLabel('Model', { exact: true });
  const composerChips = page.locator('form.composer .chip');
  const userMsgs = page.locator('article.msg.user');
  const replies = page.locator('article.msg.assistant');
  const chatBodies = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/api/chat') && r.method() === 'POST') chatBodies.push(r.postDataJSON());
  });
  const waitDone = async (n, timeout = 60000) =>
    page.waitForFunction(
      (n) =>
        document.querySelectorAll('article.msg.assistant').length === n &&
        !document.querySelector('.messages[aria-busy="true"]'),
      n,
      { timeout },
    );
  const newChat = async (model = pulled) => {
    const oldUrl = page.url();
    await page.keyboard.press('Alt+n');
    await page.waitForFunction((u) => location.href !== u, oldUrl);
    await modelSelect.selectOption(model);
  };
  const themed = async (name, fn) => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await fn(`${name}-dark`);
    await page.emulateMedia({ colorScheme: 'light' });
  };
  const phone = async (fn) => {
    await page.setViewportSize({ width: 375, height: 740 });
    await page.waitForTimeout(300); // the sidebar slides out of view
    await fn();
    await page.setViewportSize({ width: 1280, height: 800 });
  };

  // Files made by real tools: a two-page PDF Chromium prints (embedded fonts, a text layer),
  // and a PNG it screenshots.
  const maker = await context.newPage();
  await maker.setContent(
    '<h1>Field notes</h1><p>The heron count was 17.</p>' +
      '<p style="break-before: page">Page two names the PELICAN.</p>' +
      '<div id="swatch" style="width:48px;height:48px;background:#c2410c"></div>',
  );
  const pdf = await maker.pdf({ format: 'A6' });
  const png = await maker.locator('#swatch').screenshot();
  await maker.close();

  // --- Attachments: picker, paste, drop ---
  await nav('Chat').click();
  await newChat();
  await page.getByLabel('Attach files').setInputFiles([
    { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('Shopping: 3 apples, 2 pears.\n') },
    { name: 'fib.py', mimeType: 'text/x-python', buffer: Buffer.from('def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n') },
    { name: 'field-notes.pdf', mimeType: 'application/pdf', buffer: pdf },
  ]);
  await composerChips.filter({ hasText: 'field-notes.pdf' }).filter({ hasText: 'PDF, 2 pages' }).waitFor();
  await composerChips.filter({ hasText: 'fib.py' }).waitFor();
  await composer.evaluate((el) => {
    const dt = new DataTransfer();
    dt.items.add(new File(['pasted words\n'], 'clip.md', { type: 'text/markdown' }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  });
  await composerChips.filter({ hasText: 'clip.md' }).waitFor();
  const dropped = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(['dropped text\n'], 'drop.txt', { type: 'text/plain' }));
    return dt;
  });
  await page.locator('.messages').dispatchEvent('dragover', { dataTransfer: dropped });
  await page.locator('.messages').dispatchEvent('drop', { dataTransfer: dropped });
  await composerChips.filter({ hasText: 'drop.txt' }).waitFor();
  assert.equal(await composerChips.count(), 5);
  for (const chip of await composerChips.all()) assert.match(await chip.innerText(), /≈[\d,]+ tokens/);
  assert.ok(
    requests.some((u) => /\/assets\/pdf\.worker[^/]*\.mjs$/.test(u) && u.startsWith(base)),
    'the PDF worker was not loaded from the server',
  );
  await page.getByRole('button', { name: 'Remove drop.txt' }).click();
  assert.equal(await composerChips.count(), 4);
  await composer.fill('What do these files say?');
  await page.locator('.ctx-meter', { hasText: '+ ≈' }).waitFor(); // the meter counts the draft
  await shot('attachments');
  await checkA11y('the chat page with attachments');
  await composer.press('Enter');
  await waitDone(1);
  const sent = chatBodies.at(-1).messages.at(-1);
  assert.equal(sent.role, 'user');
  for (const want of [
    '<file name="notes.txt">\nShopping: 3 apples, 2 pears.\n</file>',
    '<file name="fib.py">\ndef fib(n):',
    '<file name="field-notes.pdf">',
    'The heron count was 17.',
    'Page two names the PELICAN.',
    '<file name="clip.md">\npasted words\n</file>',
  ])
    assert.ok(sent.content.includes(want), `the request lacks ${JSON.stringify(want)}:\n${sent.content}`);
  assert.ok(!sent.content.includes('dropped text'), 'a removed file was sent');
  assert.ok(sent.content.endsWith('\n\nWhat do these files say?'));
  assert.equal(await userMsgs.last().locator('.chip').count(), 4);
  await userMsgs.last().locator('.chip', { hasText: 'field-notes.pdf' }).waitFor();
  step('attach (picker), paste and drop text, source and PDF files: chips with token estimates, text in /api/chat');

  // --- Context meter: the last reply's counts against the loaded model's window ---
  const stats = await replies.last().locator('.stats').innerText();
  const prompt = Number(/prompt (\d+) tokens/.exec(stats)?.[1]);
  const generated = Number(/(\d+) tokens ·|· (\d+) tokens/.exec(stats)?.slice(1).find(Boolean));
  assert.ok(prompt > 50 && generated > 0, `stats: ${stats}`);
  const ps = await (await fetch(`${base}/api/ps`)).json();
  const ctx = ps.models.find((m) => m.name === pulled)?.context_length;
  assert.ok(ctx > 0, `no context_length in /api/ps: ${JSON.stringify(ps)}`);
  const meterText = `${fmt.format(prompt + generated)} / ${fmt.format(ctx)}`;
  await page.locator('.ctx-meter', { hasText: meterText }).waitFor();
  const meter = await page.locator('.ctx-meter meter').evaluate((m) => [m.value, m.max]);
  assert.deepEqual(meter, [prompt + generated, ctx]);
  step(`context meter: ${meterText} (prompt_eval_count + eval_count of the last reply, /api/ps context_length)`);

  // --- A message larger than the context window is refused; an image for a model without vision too ---
  await page.getByLabel('Attach files').setInputFiles([
    { name: 'huge.log', mimeType: 'text/plain', buffer: Buffer.from('word '.repeat(ctx)) },
  ]);
  const refusal = page.getByRole('alert').filter({ hasText: 'cannot be sent' });
  await refusal.waitFor();
  assert.match(await refusal.innerText(), new RegExp(`more than the ${fmt.format(ctx)}-token context window`));
  await composer.fill('Summarise the log');
  assert.equal(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled(), true);
  await shot('attachment-too-large');
  await phone(async () => {
    await themed('attachment-too-large-375px', shot);
  });
  await page.getByRole('button', { name: 'Remove huge.log' }).click();
  await refusal.waitFor({ state: 'detached' });
  await page.getByLabel('Attach files').setInputFiles([{ name: 'swatch.png', mimeType: 'image/png', buffer: png }]);
  await page.getByRole('alert').filter({ hasText: 'cannot read images (it has no vision capability)' }).waitFor();
  assert.equal(await composerChips.count(), 0);
  await composer.fill('');
  step('a message over the context window is refused (Send disabled); images refused for a model without vision');

  // --- A model created with a vision projector: no vision encoder runs yet (issue 38), so it does
  // not claim the capability, the UI refuses its images and the server says why ---
  {
    const upload = async (path) => {
      const bytes = readFileSync(path);
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      const r = await fetch(`${base}/api/blobs/${digest}`, { method: 'POST', body: bytes });
      assert.ok(r.status === 201 || r.status === 200, `blob upload: ${r.status}`);
      return digest;
    };
    const files = {
      'tiny.gguf': await upload(process.env.VKLLM_GGUF),
      'mmproj.gguf': await upload(process.env.VKLLM_MMPROJ),
    };
    const created = await fetch(`${base}/api/create`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'tiny-vision',
        files,
        template: 'USER: {{ .Prompt }} ASSISTANT:',
        parameters: { num_predict: 24 },
        stream: false,
      }),
    });
    assert.equal(created.status, 200, await created.text());
    const show = await (await fetch(`${base}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'tiny-vision' }) })).json();
    assert.ok(show.projector_info, 'the projector is listed');
    assert.ok(!show.capabilities.includes('vision'), `capabilities: ${show.capabilities}`);
    const sent = await fetch(`${base}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'tiny-vision',
        messages: [{ role: 'user', content: 'What colour is this?', images: [png.toString('base64')] }],
      }),
    });
    assert.equal(sent.status, 400);
    assert.equal((await sent.json()).error, '"tiny-vision" does not support images: vkllm does not run vision encoders yet');
    await page.reload(); // the model list comes from /api/tags at load
    await userMsgs.first().waitFor(); // the conversations are back from IndexedDB
    await page.locator('select[aria-label="Model"] option', { hasText: 'tiny-vision:latest' }).waitFor({ state: 'attached' });
    await newChat('tiny-vision:latest');
    await page.getByLabel('Attach files').setInputFiles([{ name: 'swatch.png', mimeType: 'image/png', buffer: png }]);
    await page.getByRole('alert').filter({ hasText: 'cannot read images (it has no vision capability)' }).waitFor();
    assert.equal(await composerChips.count(), 0);
    step('a model with a vision projector: listed, no vision capability while no encoder runs, images refused by the UI and the server');

    // --- A Gemma 3 model with its projector: vision listed, an image attached, sent and answered ---
    const g3 = await fetch(`${base}/api/create`, {
      method: 'POST',
      body: JSON.stringify({
        model: 'g3-vision',
        files: { 'gemma3.gguf': await upload(process.env.VKLLM_G3), 'mmproj.gguf': await upload(process.env.VKLLM_G3_MMPROJ) },
        template: '{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}model:',
        parameters: { num_predict: 6 },
        stream: false,
      }),
    });
    assert.equal(g3.status, 200, await g3.text());
    await page.reload(); // the model list comes from /api/tags at load
    await page.locator('select[aria-label="Model"] option', { hasText: 'g3-vision:latest' }).waitFor({ state: 'attached' });
    await newChat('g3-vision:latest');
    await page.getByLabel('Attach files').setInputFiles([{ name: 'swatch.png', mimeType: 'image/png', buffer: png }]);
    await composerChips.filter({ hasText: 'swatch.png' }).filter({ hasText: 'image' }).waitFor();
    await composer.fill('What colour is this?');
    await composer.press('Enter');
    await waitDone(1);
    const asked = chatBodies.at(-1).messages.at(-1);
    assert.deepEqual(asked.images, [png.toString('base64')]);
    await userMsgs.last().locator('.images img').waitFor();
    assert.ok((await replies.last().innerText()).length > 0, 'no answer about the image');
    await shot('vision-chat');
    // Unloaded again: the running page's check later expects only the pulled model.
    const unload = await fetch(`${base}/api/generate`, {
      method: 'POST',
      body: JSON.stringify({ model: 'g3-vision', keep_alive: 0 }),
    });
    assert.equal(unload.status, 200);
    for (let i = 0; i < 50; i++) {
      const ps = await (await fetch(`${base}/api/ps`)).json();
      if (!ps.models.some((m) => m.name === 'g3-vision:latest')) break;
      await page.waitForTimeout(100);
    }
    step('a Gemma 3 model with its projector: vision listed, an attached image sent as images, its thumbnail shown, the answer streamed');
  }

  // --- Maths: an old (version 1) export with LaTeX in a reply, typeset by KaTeX ---
  const mathsExport = join(shots, 'maths-v1-export.json');
  const answer = [
    'Euler wrote $e^{i\\pi} + 1 = 0$, and inline \\(a^2 + b^2 = c^2\\) holds for right triangles.',
    '',
    '$$',
    '\\int_0^1 x^2\\,dx = \\frac{1}{3}',
    '$$',
    '',
    '\\[ \\sum_{k=1}^{n} k = \\frac{n(n+1)}{2} \\]',
    '',
    'Untrusted commands stay inert: $\\href{javascript:alert(1)}{click}$ and prices like $5 or $10 stay text.',
  ].join('\n');
  writeFileSync(
    mathsExport,
    JSON.stringify({
      format: 'vkllm-conversations',
      version: 1,
      conversations: [
        {
          id: 'maths-v1',
          title: 'Maths from an old export',
          model: pulled,
          system: '',
          options: {},
          messages: [
            { id: 'm1', role: 'user', content: 'Show me some maths' },
            { id: 'm2', role: 'assistant', content: answer, model: pulled },
          ],
          createdAt: 1,
          updatedAt: 2,
        },
      ],
    }),
  );
  await nav('Chat').click();
  await convs.getByLabel('Import conversations file').setInputFiles(mathsExport);
  await convs.getByText('Imported 1 conversation.').waitFor();
  await convs.getByRole('link', { name: 'Maths from an old export' }).click();
  const md = replies.last().locator('.md');
  await page.waitForFunction(() => document.querySelectorAll('.md .katex').length === 5);
  assert.equal(await md.locator('.katex-display').count(), 2);
  const sources = await md.locator('annotation').evaluateAll((els) => els.map((e) => e.textContent)); // MathML: no innerText
  assert.deepEqual(sources.map((s) => s.trim()), [
    'e^{i\\pi} + 1 = 0',
    'a^2 + b^2 = c^2',
    '\\int_0^1 x^2\\,dx = \\frac{1}{3}',
    '\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}',
    '\\href{javascript:alert(1)}{click}',
  ]);
  assert.equal(await md.locator('a').count(), 0, 'a link came out of \\href');
  assert.match(await md.innerText(), /prices like \$5 or \$10 stay text/);
  await page.evaluate(() => document.fonts.ready);
  const fonts = requests.filter((u) => /KaTeX_[^/]+\.woff2$/.test(u));
  assert.ok(fonts.length > 0 && fonts.every((u) => u.startsWith(base)), `KaTeX fonts: ${fonts}`);
  await shot('maths');
  await checkA11y('a reply with maths');
  await themed('maths', async (name) => {
    await shot(name);
    await checkA11y('a reply with maths (dark)');
  });
  await phone(async () => {
    await shot('maths-375px');
    await themed('maths-375px', shot);
  });
  step('maths: $…$, \\(…\\), $$…$$ and \\[…\\] typeset by KaTeX (lazy chunk, fonts from the server), \\href inert, v1 export imported');

  // --- Versions: edit a message, regenerate a reply, switch, export and import ---
  await newChat();
  await composer.fill('First question');
  await composer.press('Enter');
  await waitDone(1);
  const replyA = await replies.last().locator('.md').innerText();
  await userMsgs.first().getByRole('button', { name: 'Edit' }).click();
  await page.getByLabel('Edit message').fill('Second question');
  await page.getByRole('button', { name: 'Save & send' }).click();
  await waitDone(1);
  const replyB = await replies.last().locator('.md').innerText();
  const userVersions = userMsgs.first().getByRole('group', { name: 'Versions' });
  await userVersions.locator('.sr-only', { hasText: 'Version 2 of 2' }).waitFor();
  await userVersions.getByRole('button', { name: 'Previous version' }).click();
  await userMsgs.first().locator('.plain', { hasText: 'First question' }).waitFor();
  assert.equal(await replies.last().locator('.md').innerText(), replyA);
  await userVersions.getByRole('button', { name: 'Next version' }).click();
  await userMsgs.first().locator('.plain', { hasText: 'Second question' }).waitFor();
  assert.equal(await replies.last().locator('.md').innerText(), replyB);
  step('edit keeps the earlier message and its reply as version 1 of 2; arrows switch');

  await replies.last().getByRole('button', { name: 'Regenerate' }).click();
  await waitDone(1);
  const replyC = await replies.last().locator('.md').innerText();
  const replyVersions = replies.last().getByRole('group', { name: 'Versions' });
  await replyVersions.locator('.sr-only', { hasText: 'Version 2 of 2' }).waitFor();
  await replyVersions.getByRole('button', { name: 'Previous version' }).click();
  assert.equal(await replies.last().locator('.md').innerText(), replyB);
  await shot('versions');
  await checkA11y('a conversation with versions');
  await phone(async () => {
    await themed('versions-375px', shot);
  });
  await replyVersions.getByRole('button', { name: 'Next version' }).click();
  assert.equal(await replies.last().locator('.md').innerText(), replyC);
  step('regenerate keeps the earlier reply as another version');

  const title = 'Second question';
  const [download] = await Promise.all([page.waitForEvent('download'), convs.getByRole('button', { name: 'Export', exact: true }).click()]);
  const exported = join(shots, 'export-versions.json');
  await download.saveAs(exported);
  const saved = JSON.parse(readFileSync(exported, 'utf8'));
  assert.equal(saved.version, 2);
  await convs.getByRole('button', { name: `Delete ${title}` }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await convs.getByRole('link', { name: title }).waitFor({ state: 'detached' });
  await convs.getByLabel('Import conversations file').setInputFiles(exported);
  await convs.getByText(/Imported \d+ conversations?\./).waitFor();
  await convs.getByRole('link', { name: title }).click();
  await userMsgs.first().locator('.plain', { hasText: 'Second question' }).waitFor();
  await userMsgs.first().getByRole('button', { name: 'Previous version' }).click();
  await userMsgs.first().locator('.plain', { hasText: 'First question' }).waitFor();
  assert.equal(await replies.last().locator('.md').innerText(), replyA);
  step('versions survive export and import');
}
