// The operator console in real headless Chromium against a real `organism serve` process.
// Run alone: npm run test:console (needs /usr/bin/chromium, or CHROMIUM_PATH; npm run build first).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer, VIEW_TOKEN, watchErrors, type Server } from './harness.js';

let server: Server;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let watch: ReturnType<typeof watchErrors>;
const offHost: string[] = [];

beforeAll(async () => {
  server = await startServer();
  browser = await launchBrowser();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function freshPage(): Promise<Page> {
  page = await browser.context.newPage();
  watch = watchErrors(page);
  const origin = new URL(server.url);
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.host !== origin.host) offHost.push(r.url());
  });
  return page;
}

afterEach(async () => {
  const unexpected = watch?.unexpected() ?? [];
  await page?.close();
  expect(unexpected, 'page errors and console errors').toEqual([]);
  expect(offHost, 'requests to other hosts').toEqual([]);
});

const inject = async (to: string, payload: unknown, extra: Record<string, unknown> = {}) => {
  const r = await server.api('POST', '/inject', { to, payload, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { threadId: string; messageId: string };
};
const threadStatus = async (id: string) => (await server.api('GET', `/threads/${id}`)).body?.status as string | undefined;

describe('serving', () => {
  it('prints the console URL first; serves index.html for deep links, hashed assets cached for a year, API paths keep their 404', async () => {
    const lines = server.output().split('\n');
    const urlLines = lines.filter((l) => /https?:\/\/|ws:\/\//.test(l));
    expect(urlLines[0]).toMatch(/^\s+Console:\s+http:\/\/127\.0\.0\.1:\d+\/$/);
    const index = await fetch(`${server.url}/threads/some-thread-id`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    // The page's query string is the console's (view filters), not a server parameter.
    const withQuery = await fetch(`${server.url}/journal?state=FAILED&x=1`);
    expect(withQuery.status).toBe(200);
    expect(withQuery.headers.get('content-type')).toContain('text/html');
    const html = await index.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${server.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    for (const p of ['/api/v1/nope', '/health/x', '/ws/nope', '/metrics/x']) {
      const r = await fetch(`${server.url}${p}`);
      expect(r.status, p).toBe(404);
      expect(((await r.json()) as { detail: string }).detail).toBe(`Not found: GET ${p}`);
    }
    expect((await fetch(`${server.url}/assets/missing-123.js`)).status).toBe(404);
    expect((await fetch(`${server.url}/api/v1/organism`)).status).toBe(401);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});

// Generous: a loaded 2-core machine runs a server, a browser and the test at once.
describe('console in Chromium', { timeout: 120_000 }, () => {
  it('first load (cold cache): measures the shipped JavaScript (budget 1.5 MB uncompressed)', async () => {
    await freshPage();
    const client = await page.context().newCDPSession(page);
    await client.send('Network.enable');
    await client.send('Network.clearBrowserCache');
    const js: Array<{ url: string; bytes: number }> = [];
    page.on('response', async (res) => {
      if (res.request().resourceType() === 'script') js.push({ url: res.url(), bytes: (await res.body()).length });
    });
    await page.goto(server.url);
    await page.getByLabel('Token').waitFor();
    await eventually(() => js.length > 0, 'scripts loaded');
    const total = js.reduce((a, b) => a + b.bytes, 0);
    const report = { measuredAt: new Date().toISOString(), scripts: js.map((s) => ({ path: new URL(s.url).pathname, bytes: s.bytes })), totalBytes: total, budgetBytes: 1.5 * 1024 * 1024 };
    mkdirSync('test-results', { recursive: true });
    writeFileSync('test-results/console-first-load.json', `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`console first load: ${js.length} script(s), ${total} bytes of JavaScript (uncompressed)\n`);
    expect(total).toBeLessThan(1.5 * 1024 * 1024);
  });

  it('sign-in: a wrong token is refused on the form; the right one opens the overview; sign-out forgets it', async () => {
    await freshPage();
    watch.allow(/Failed to load resource: the server responded with a status of 401/);
    await page.goto(server.url);
    await expect(page.getByLabel('Token').getAttribute('type')).resolves.toBe('password');
    await page.getByLabel('Token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong token' }).waitFor();
    expect(page.url()).not.toContain('token');

    await page.getByLabel('Token').fill(OP_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByText('console-test').first().waitFor();
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
    expect(page.url()).not.toContain(OP_TOKEN);
    // The tab keeps the session across a reload.
    await page.reload();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.reload();
    await page.getByLabel('Token').waitFor();
  });

  it('every view renders with data, each at its own URL', async () => {
    const done = await inject('researcher', { Question: { text: 'tide pools' } }, { metadata: { orgId: 'acme' } });
    await eventually(async () => (await threadStatus(done.threadId)) === 'completed', 'demo thread to complete');
    await inject('gossip', { Question: { text: 'psst' } }); // a denied send
    const failed = await inject('flaky', { Announcement: { text: 'boom' } });
    await eventually(async () => (await server.api('GET', `/journal/${failed.messageId}`)).body?.deliveryState === 'FAILED', 'flaky entry FAILED');

    await freshPage();
    await signIn(page, server.url, OP_TOKEN);
    const views: Array<[string, string, () => Promise<unknown>]> = [
      ['/', 'Overview', () => page.getByText(/\d+ failed deliveries/).waitFor()],
      ['/topology', 'Topology', () => page.locator('[data-edge="gossip->announcer"]').filter({ hasText: 'denied' }).waitFor()],
      ['/agents', 'Agents', () => page.getByRole('link', { name: 'researcher' }).waitFor()],
      ['/agents/researcher', 'researcher', () => page.getByText('JSON Schema').waitFor()],
      ['/threads', 'Threads', () => page.getByRole('link', { name: done.threadId }).waitFor()],
      [`/threads/${done.threadId}`, 'Thread', () => page.getByRole('list', { name: 'Timeline' }).getByText('Findings').waitFor()],
      ['/messages', 'Messages', () => page.getByText('streaming').waitFor()],
      ['/inject', 'Inject', () => page.getByRole('combobox', { name: 'Target' }).waitFor()],
      ['/journal?state=FAILED', 'Journal', () => page.getByText('flaky by design').first().waitFor()],
      ['/usage', 'Usage', () => page.getByRole('cell', { name: 'acme' }).waitFor()],
      ['/config', 'Configuration', () => page.getByText('name: console-test').waitFor()],
    ];
    for (const [path, heading, check] of views) {
      await page.goto(`${server.url}${path}`); // a deep link, loaded from the server
      await page.getByRole('heading', { name: heading }).first().waitFor();
      await check();
    }
    // The thread timeline lists its LLM calls with their usage.
    await page.goto(`${server.url}/threads/${done.threadId}`);
    await page.getByRole('region', { name: 'LLM calls' }).getByRole('cell', { name: 'researcher' }).waitFor();
    // Clicking a node in the topology opens the agent.
    await page.goto(`${server.url}/topology`);
    await page.getByRole('link', { name: 'Agent writer' }).click();
    await page.waitForURL(/\/agents\/writer$/);
  }, 120_000);

  it('pause and resume an agent', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/agents/writer');
    await page.getByRole('button', { name: 'Pause writer' }).click();
    await eventually(async () => (await server.api('GET', '/agents/writer')).body.state === 'paused', 'writer paused');
    await page
      .getByRole('heading', { name: /writer/ })
      .getByText('paused')
      .waitFor();
    await page.getByRole('button', { name: 'Resume writer' }).click();
    await eventually(async () => (await server.api('GET', '/agents/writer')).body.state !== 'paused', 'writer resumed');
    // The page learns of the resume from the socket a moment after the API answers.
    await eventually(() => page.getByRole('button', { name: 'Pause writer' }).isEnabled(), 'Pause writer enabled again');
  });

  it('a new thread appears live in the list; raise its budget, then kill it after confirming', async () => {
    await server.api('POST', '/agents/writer/pause');
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/threads');
    await page.getByRole('table', { name: 'Threads' }).waitFor();
    const t = await inject('researcher', { Question: { text: 'live thread' } });
    // No reload: the thread_created event refreshes the list.
    await page.getByRole('link', { name: t.threadId }).waitFor();
    await page.getByRole('link', { name: t.threadId }).click();
    await page
      .getByRole('heading', { name: /Thread/ })
      .getByText('active')
      .waitFor();
    await eventually(async () => (await server.api('GET', `/usage/history?threadId=${t.threadId}`)).body.total > 0, 'an LLM call of the thread');
    await page.reload();
    await page.getByLabel('New ceiling (tokens)').fill('90000');
    await page.getByRole('button', { name: 'Raise budget' }).click();
    await page.getByText('of 90,000 tokens').waitFor();
    expect((await server.api('GET', `/usage/threads/${t.threadId}`)).body.maxTokens).toBe(90000);

    await page.getByRole('button', { name: 'Kill thread' }).click();
    const dialog = page.getByRole('dialog', { name: 'Kill this thread?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await threadStatus(t.threadId)).toBe('active');
    await page.getByRole('button', { name: 'Kill thread' }).click();
    await dialog.getByRole('button', { name: 'Kill' }).click();
    await eventually(async () => (await threadStatus(t.threadId)) === 'killed', 'thread killed');
    await page
      .getByRole('heading', { name: /Thread/ })
      .getByText('killed')
      .waitFor();
    await server.api('POST', '/agents/writer/resume');
  });

  it('inject through the form generated from the JSON Schema (nested object, list), then open the new thread', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/inject');
    await page.getByRole('combobox', { name: 'Target' }).selectOption('archivist');
    await page.getByRole('group', { name: /^author/ }).waitFor();
    await page.getByRole('textbox', { name: /^title/ }).fill('Quarterly');
    await page.getByRole('spinbutton', { name: /^pages/ }).fill('12');
    await page
      .getByRole('group', { name: /^author/ })
      .getByRole('textbox', { name: /^name/ })
      .fill('Ada');
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.getByRole('textbox', { name: /^tags\[0\]/ }).fill('finance');
    await page.getByLabel('orgId').fill('acme');
    await page.getByRole('button', { name: 'Inject', exact: true }).click();
    await page.waitForURL(/\/threads\/[0-9a-f-]+$/);
    const threadId = page.url().split('/').pop()!;
    const messages = (await server.api('GET', `/threads/${threadId}/messages`)).body.messages;
    expect(messages[0]).toMatchObject({ to: 'archivist', payloadType: 'Report', payload: { title: 'Quarterly', pages: 12, author: { name: 'Ada' }, tags: ['finance'] } });
    await page.getByRole('list', { name: 'Timeline' }).getByText('Quarterly').waitFor();

    // A payload the schema refuses: the API's detail is shown.
    await page.goto(`${server.url}/inject`);
    await page.getByRole('combobox', { name: 'Target' }).selectOption('archivist');
    await page.getByLabel('Raw JSON').check();
    await page.getByRole('textbox', { name: /Payload/ }).fill('{"Report": {"title": "x"}}');
    watch.allow(/status of 422/);
    await page.getByRole('button', { name: 'Inject', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'pages' }).waitFor();
  });

  it('redeliver one FAILED entry, then a selected set in bulk', async () => {
    const a = await inject('flaky', { Announcement: { text: 'one' } });
    const b = await inject('flaky', { Announcement: { text: 'two' } });
    for (const m of [a, b]) await eventually(async () => (await server.api('GET', `/journal/${m.messageId}`)).body?.deliveryState === 'FAILED', 'FAILED');
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/journal?state=FAILED');
    const attemptsBefore = (await server.api('GET', `/journal/${a.messageId}`)).body.attempts as number;
    await page.getByRole('button', { name: `Redeliver ${a.messageId}` }).click();
    await page.getByRole('status').filter({ hasText: 'Redelivered 1 of 1' }).waitFor();
    await eventually(async () => {
      const e = (await server.api('GET', `/journal/${a.messageId}`)).body;
      return e.attempts > attemptsBefore && e.deliveryState === 'FAILED';
    }, 'redelivered entry attempted again');
    await page.reload();
    await page.getByRole('checkbox', { name: `Select ${b.messageId}` }).check();
    await page.getByRole('checkbox', { name: `Select ${a.messageId}` }).check();
    await page.getByRole('button', { name: 'Redeliver selected (2)' }).click();
    await page.getByRole('dialog', { name: 'Redeliver 2 failed entries?' }).getByRole('button', { name: 'Redeliver 2' }).click();
    await page.getByRole('status').filter({ hasText: 'Redelivered 2 of 2' }).waitFor();
  });

  it('reload shows the dry-run diff first and applies only on confirm', async () => {
    const original = readFileSync(server.configPath, 'utf8');
    writeFileSync(server.configPath, `${original}\n  - name: echo2\n    description: Added by the reload test\n    handler: ./tools.ts#announce\n    payload: Announcement\n    peers: []\n`);
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/config');
    await page.getByRole('button', { name: 'Reload' }).click();
    const dialog = page.getByRole('dialog', { name: 'Apply this reload?' });
    await dialog.getByText('+ added echo2').waitFor();
    expect((await server.api('GET', '/agents/echo2')).status).toBe(404); // dry run changed nothing
    await dialog.getByRole('button', { name: 'Apply reload' }).click();
    await page.getByRole('status').filter({ hasText: 'Reloaded' }).waitFor();
    expect((await server.api('GET', '/agents/echo2')).status).toBe(200);

    // A broken file: the API's error is shown, nothing changes.
    writeFileSync(server.configPath, `${original}\n  - name: broken\n    handler: ./tools.ts#nope\n    payload: Announcement\n`);
    watch.allow(/status of 422/); // the dry run of an invalid file: 422 with every problem
    await page.getByRole('button', { name: 'Reload' }).click();
    await page.getByRole('alert').filter({ hasText: 'nope' }).waitFor();
    writeFileSync(server.configPath, original);
  });

  it('messages: the live stream with filter chips and pause', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/messages');
    await page.getByText('streaming').waitFor();
    await page.getByLabel('Value').fill('archivist');
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByRole('list', { name: 'Filters' }).getByText('agent: archivist').waitFor();
    await inject('researcher', { Question: { text: 'not shown' } });
    await inject('archivist', { Report: { title: 'Shown', pages: 1, author: { name: 'B' }, tags: [] } });
    const log = page.getByRole('log', { name: 'Message stream' });
    await log.getByText('Shown').first().waitFor();
    expect(await log.getByText('not shown').count()).toBe(0);
    await page.getByRole('button', { name: 'Pause stream' }).click();
    await inject('archivist', { Report: { title: 'While paused', pages: 1, author: { name: 'B' }, tags: [] } });
    await page.getByText(/paused, [1-9]\d* not shown/).waitFor();
    expect(await log.getByText('While paused').count()).toBe(0);
  });

  it('a viewer sees every operator action disabled, with the reason on hover', async () => {
    await freshPage();
    await signIn(page, server.url, VIEW_TOKEN, '/agents');
    await page.getByText('watcher (viewer)').waitFor();
    const t = await inject('researcher', { Question: { text: 'viewer look' } });
    const checks: Array<[string, string[]]> = [
      ['/agents', ['Pause researcher', 'Resume researcher', 'Pause writer']],
      [`/threads/${t.threadId}`, ['Kill thread']],
      ['/journal?state=FAILED', []],
      ['/config', ['Reload']],
      ['/inject', ['Inject']],
    ];
    for (const [path, names] of checks) {
      await page.goto(`${server.url}${path}`);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      for (const name of names) {
        const button = page.getByRole('button', { name, exact: true });
        await button.first().waitFor();
        expect(await button.first().isDisabled(), `${path}: ${name}`).toBe(true);
        expect(await button.first().getAttribute('title')).toContain('viewer role');
      }
      // No enabled button anywhere on the page performs an operator action.
      const enabled = await page.locator('button:enabled:visible').allInnerTexts();
      for (const text of enabled) expect(text, path).not.toMatch(/Pause|Resume|Kill|Raise|Redeliver|Reload|Inject|Apply/);
    }
    await page.goto(`${server.url}/journal?state=FAILED`);
    await page.getByText('flaky by design').first().waitFor();
    // Read at once: a row's button gives way to "thread killed" once its thread's status loads,
    // so a list of locators read one by one can lose one in between.
    const redeliver = await page.getByRole('button', { name: /^Redeliver/ }).evaluateAll((bs) => bs.map((b) => (b as { disabled: boolean }).disabled));
    expect(redeliver.length).toBeGreaterThan(0);
    expect(redeliver.every(Boolean)).toBe(true);
  });

  it('reconnects after the server restarts: new boot, live again, new threads still appear', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/threads');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const bootBefore = (await server.api('GET', '/organism')).body.bootId as string;
    // While the worker restarts, the socket and any request briefly fail: expected here.
    watch.allow(/WebSocket connection to .* failed|Failed to load resource|ERR_CONNECTION_REFUSED/);
    expect((await server.api('POST', '/organism/restart')).status).toBe(202);
    await page.getByRole('status', { name: /Connection: (Reconnecting|Connecting)/ }).waitFor();
    const bootAfter = await eventually(
      async () => {
        const r = await server.api('GET', '/organism');
        return r.status === 200 && r.body.bootId !== bootBefore ? (r.body.bootId as string) : null;
      },
      'a new worker',
      60_000,
    );
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor({ timeout: 30_000 });
    expect(await page.getByRole('status', { name: 'Connection: Live' }).getAttribute('title')).toBe(`boot ${bootAfter}`);
    const t = await inject('researcher', { Question: { text: 'after restart' } });
    await page.getByRole('link', { name: t.threadId }).waitFor();
  });
});
