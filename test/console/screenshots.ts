// Screenshots of the console's main views for docs/console/ (npm run console:screenshots).
// The same parts as the browser tests: a real `organism serve` with demo traffic, Debian's Chromium.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startHttpMcpServer } from '../mcp/fixtures/mcp-server.js';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer } from './harness.js';
import { closedPort, inspectorYaml, writeInspectorOrganism } from './inspector-organism.js';

const OUT = path.resolve('docs/console');
mkdirSync(OUT, { recursive: true });
// `npm run console:screenshots -- inspector` retakes only the pictures whose names start so.
const only = process.argv.slice(2);
const wanted = (name: string) => only.length === 0 || only.some((o) => name.startsWith(o));

// The main views, on the fixture organism with demo traffic.
if (only.length === 0 || only.some((o) => !o.startsWith('inspector'))) {
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
      if (!views.some(([name]) => wanted(name))) break;
      const browser = await launchBrowser({ colorScheme: scheme });
      const page = await browser.context.newPage();
      await signIn(page, server.url, OP_TOKEN);
      for (const [name, route, inDark] of views) {
        if ((scheme === 'dark' && !inDark) || !wanted(name)) continue;
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
}

// The LLM call inspector: an MCP call and a repair round opened; a provider that is down.
if (wanted('inspector')) {
  const mcp = await startHttpMcpServer();
  const organism = await startServer([], { setup: writeInspectorOrganism(inspectorYaml(mcp.url, await closedPort())) });
  try {
    const settled = async (to: string, text: string) => {
      const threadId = (await organism.api('POST', '/inject', { to, payload: { text } })).body.threadId as string;
      await eventually(async () => (await organism.api('GET', `/threads/${threadId}`)).body.status !== 'active', `the ${to} thread to settle`, 60_000);
      return threadId;
    };
    const investigated = await settled('investigator', 'tide pools');
    const offline = await settled('offline', 'anyone there?');
    for (const scheme of ['light', 'dark'] as const) {
      const browser = await launchBrowser({ colorScheme: scheme });
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: 1280, height: 900 });
      await signIn(page, organism.url, OP_TOKEN, `/threads/${investigated}`);
      // An element screenshot scrolls: the sticky header would be drawn over the middle of it.
      await page.addStyleTag({ content: 'header { position: static !important; }' });
      const inspector = page.getByRole('region', { name: 'LLM call inspector' });
      const heads = inspector.locator('.llm-call-head');
      await eventually(async () => (await heads.count()) === 3, 'the three calls');
      await heads.nth(0).click();
      await heads.nth(2).click();
      await inspector.getByRole('listitem', { name: 'Delivery to announcer' }).waitFor();
      await inspector.screenshot({ path: path.join(OUT, `inspector-${scheme}.png`) });
      process.stdout.write(`docs/console/inspector-${scheme}.png\n`);
      if (scheme === 'light') {
        await page.goto(`${organism.url}/threads/${offline}`);
        await page.addStyleTag({ content: 'header { position: static !important; }' });
        const failed = page.getByRole('region', { name: 'LLM call inspector' });
        await eventually(async () => (await failed.locator('.llm-call-head').count()) === 2, 'the two failed attempts');
        await failed.locator('.llm-call-head').nth(1).click();
        await failed.getByRole('alert').waitFor();
        await failed.screenshot({ path: path.join(OUT, 'inspector-failed-light.png') });
        process.stdout.write('docs/console/inspector-failed-light.png\n');
      }
      await browser.close();
    }
  } finally {
    await organism.stop();
    await mcp.close();
  }
}
