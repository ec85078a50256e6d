// Screenshots of the console's main views for docs/console/ (npm run console:screenshots).
// The same parts as the browser tests: a real `organism serve` with demo traffic, Debian's Chromium.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer } from './harness.js';

const OUT = path.resolve('docs/console');
mkdirSync(OUT, { recursive: true });

const server = await startServer(['--demo-traffic', '1']);
try {
  // Something in every view: a finished thread, a denied send, a failed delivery, a running thread.
  const post = (to: string, payload: unknown, metadata?: Record<string, string>) => server.api('POST', '/inject', { to, payload, ...(metadata ? { metadata } : {}) });
  const done = (await post('researcher', { Question: { text: 'tide pools' } }, { orgId: 'acme', userId: 'ana' })).body.threadId as string;
  await post('gossip', { Question: { text: 'psst' } });
  await post('flaky', { Announcement: { text: 'boom' } });
  await post('archivist', { Report: { title: 'Quarterly', pages: 12, author: { name: 'Ada' }, tags: ['finance'] } }, { orgId: 'globex' });
  await eventually(async () => (await server.api('GET', `/threads/${done}`)).body.status === 'completed', 'thread to complete');
  // Let the demo traffic run so the rates and charts have a few seconds of history.
  await new Promise((r) => setTimeout(r, 12_000));

  const views: Array<[string, string, boolean]> = [
    ['overview', '/', true],
    ['topology', '/topology', true],
    ['agents', '/agents', false],
    ['agent', '/agents/researcher', false],
    ['threads', '/threads', false],
    ['thread', `/threads/${done}`, true],
    ['messages', '/messages', false],
    ['inject', '/inject', false],
    ['journal', '/journal', false],
    ['usage', '/usage', true],
    ['config', '/config', false],
  ];
  for (const scheme of ['light', 'dark'] as const) {
    const browser = await launchBrowser({ colorScheme: scheme });
    const page = await browser.context.newPage();
    await signIn(page, server.url, OP_TOKEN);
    for (const [name, route, inDark] of views) {
      if (scheme === 'dark' && !inDark) continue;
      await page.goto(`${server.url}${route}`);
      await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
      if (name === 'inject') await page.getByRole('combobox', { name: 'Target' }).selectOption('archivist');
      await page.waitForTimeout(name === 'messages' ? 4000 : 1500); // let live data arrive
      await page.screenshot({ path: path.join(OUT, `${name}-${scheme}.png`) });
      process.stdout.write(`docs/console/${name}-${scheme}.png\n`);
    }
    await browser.close();
  }
} finally {
  await server.stop();
}
