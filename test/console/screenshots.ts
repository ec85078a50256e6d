// Screenshots of the console's main views for docs/console/ (npm run console:screenshots).
// The same parts as the browser tests: a real `organism serve` with demo traffic, Debian's Chromium.
// Names after `--` take only those (`npm run console:screenshots -- waterfall`, `-- inspector`).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startHttpMcpServer } from '../mcp/fixtures/mcp-server.js';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer } from './harness.js';
import { closedPort, inspectorYaml, writeInspectorOrganism } from './inspector-organism.js';
import { prepare } from './waterfall-fixture.js';

const OUT = path.resolve('docs/console');
mkdirSync(OUT, { recursive: true });
const only = process.argv.slice(2);
const wanted = (name: string) => only.length === 0 || only.includes(name);

const pictures = ['waterfall', 'inspector'];
if (only.length === 0 || only.some((n) => !pictures.includes(n))) await views();
if (wanted('waterfall')) await waterfall();
if (wanted('inspector')) await inspector();

async function views(): Promise<void> {
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

/**
 * The thread waterfall: one thread with an agent's MCP lookup, a delivery that failed and was
 * redelivered (failed again), and the demo's researcher -> writer -> announcer flow.
 */
async function waterfall(): Promise<void> {
  const mcp = await startHttpMcpServer();
  const server = await startServer([], { prepare: prepare(mcp.url, 'http://127.0.0.1:9/') });
  try {
    const settled = (threadId: string, what: string) => eventually(async () => (await server.api('GET', `/threads/${threadId}`)).body.status !== 'active', what, 60_000);
    const { threadId } = (await server.api('POST', '/inject', { to: 'scout', payload: { Question: { text: 'octopuses' } } })).body as { threadId: string };
    await settled(threadId, 'the lookup');
    const flaky = (await server.api('POST', '/inject', { to: 'flaky', threadId, payload: { Announcement: { text: 'boom' } } })).body as { messageId: string };
    const failed = (attempts: number) =>
      eventually(async () => {
        const e = (await server.api('GET', `/journal/${flaky.messageId}`)).body as { deliveryState: string; attempts: number };
        return e.deliveryState === 'FAILED' && e.attempts === attempts;
      }, `attempt ${attempts} to fail`);
    await failed(1);
    await server.api('POST', `/journal/${flaky.messageId}/redeliver`);
    await failed(2);
    await server.api('POST', '/inject', { to: 'researcher', threadId, payload: { Question: { text: 'tide pools' } } });
    await eventually(async () => {
      const w = (await server.api('GET', `/threads/${threadId}/waterfall`)).body as { deliveries: Array<{ to: string; state: string }> };
      return w.deliveries.some((d) => d.to === 'announcer' && d.state === 'ACKED' && w.deliveries.filter((x) => x.to === 'announcer').length === 2);
    }, 'the demo flow to finish');
    for (const scheme of ['light', 'dark'] as const) {
      const browser = await launchBrowser({ colorScheme: scheme });
      const page = await browser.context.newPage();
      await page.setViewportSize({ width: 1280, height: 900 });
      await signIn(page, server.url, OP_TOKEN, `/threads/${threadId}`);
      const card = page.getByRole('region', { name: 'Waterfall' });
      await card.locator('.wf-row[data-kind="tool"]').waitFor();
      await card.locator('.wf-row[data-failed="true"] .wf-label').first().click();
      await card.locator('.wf-details').waitFor();
      await card.screenshot({ path: path.join(OUT, `waterfall-${scheme}.png`) });
      process.stdout.write(`docs/console/waterfall-${scheme}.png\n`);
      await browser.close();
    }
  } finally {
    await server.stop();
    await mcp.close();
  }
}

/** The LLM call inspector: an MCP call and a repair round opened; a provider that is down. */
async function inspector(): Promise<void> {
  const mcp = await startHttpMcpServer();
  const organism = await startServer([], { prepare: writeInspectorOrganism(inspectorYaml(mcp.url, await closedPort())) });
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
