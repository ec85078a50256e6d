// Issue 27, item 4: each console defect found in the walk-through, asserted in real Chromium
// against a real `organism serve` (the harness's fixture organism). Run alone:
// npx vitest run test/console/fixes.test.ts (needs npm run build && npm run build:console).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer, watchErrors, type Server } from './harness.js';

let server: Server;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let watch: ReturnType<typeof watchErrors>;

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
  return page;
}

afterEach(async () => {
  const unexpected = watch?.unexpected() ?? [];
  await page?.close();
  expect(unexpected, 'page errors and console errors').toEqual([]);
});

const inject = async (to: string, payload: unknown, extra: Record<string, unknown> = {}) => {
  const r = await server.api('POST', '/inject', { to, payload, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { threadId: string; messageId: string };
};
const threadStatus = async (id: string) => (await server.api('GET', `/threads/${id}`)).body?.status as string | undefined;
const entryState = async (id: string) => (await server.api('GET', `/journal/${id}`)).body?.deliveryState as string | undefined;

/** A thread the writer (paused) has not handled yet: the researcher made its LLM call, the writer's message waits. */
async function threadWaitingOnWriter(text: string): Promise<{ threadId: string; writerEntry: string }> {
  await server.api('POST', '/agents/writer/pause');
  const t = await inject('researcher', { Question: { text } });
  const writerEntry = await eventually(async () => {
    const entries = (await server.api('GET', `/journal?threadId=${t.threadId}`)).body.entries as Array<{ id: string; to: string }>;
    return entries.find((e) => e.to === 'writer')?.id;
  }, 'the writer message queued');
  return { threadId: t.threadId, writerEntry };
}

describe('issue 27 fixes in Chromium', { timeout: 120_000 }, () => {
  it('messages: one row per message, its state updated in place (not a PENDING row and an ACKED row)', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/messages');
    await page.getByText('streaming').waitFor();
    await inject('archivist', { Report: { title: 'Counted once', pages: 1, author: { name: 'C' }, tags: [] } });
    const log = page.getByRole('log', { name: 'Message stream' });
    const rows = log.locator('.stream-row').filter({ hasText: 'Counted once' });
    await rows.filter({ hasText: 'ACKED' }).first().waitFor();
    expect(await rows.count()).toBe(1);
  });

  it('budget: completed, killed and error threads show the budget they had, read-only; Raise only where it can have an effect', async () => {
    const done = await inject('researcher', { Question: { text: 'budget kept' } });
    await eventually(async () => (await threadStatus(done.threadId)) === 'completed', 'thread completed');
    const spent = (await server.api('GET', `/usage/threads/${done.threadId}`)).body.totalTokens as number;
    expect(spent).toBeGreaterThan(0);

    const killed = await threadWaitingOnWriter('budget of a killed thread');
    await eventually(async () => (await server.api('GET', `/usage/threads/${killed.threadId}`)).status === 200, 'the killed thread has a budget');
    expect((await server.api('POST', `/threads/${killed.threadId}/kill`)).status).toBe(200);
    await server.api('POST', '/agents/writer/resume');

    // An error thread that spent tokens: the researcher's call, then a failing delivery.
    const failing = await inject('researcher', { Question: { text: 'then a failure' } });
    await eventually(async () => (await threadStatus(failing.threadId)) === 'completed', 'first part completed');
    await inject('flaky', { Announcement: { text: 'boom' } }, { threadId: failing.threadId });
    await eventually(async () => (await threadStatus(failing.threadId)) === 'error', 'thread in error');

    // An error thread stopped by its budget: raising it, then redelivering, can have an effect.
    const exhaustedId = `budget-exhausted-${Date.now()}`;
    expect((await server.api('PUT', `/usage/threads/${exhaustedId}`, { maxTokens: 1 })).status).toBe(200);
    await inject('researcher', { Question: { text: 'too small' } }, { threadId: exhaustedId });
    await eventually(async () => (await threadStatus(exhaustedId)) === 'error', 'exhausted thread in error');

    await freshPage();
    await signIn(page, server.url, OP_TOKEN, `/threads/${done.threadId}`);
    const card = page.getByRole('region', { name: 'Budget' });
    for (const id of [done.threadId, killed.threadId, failing.threadId]) {
      await page.goto(`${server.url}/threads/${id}`);
      const b = (await server.api('GET', `/usage/threads/${id}`)).body as { totalTokens: number; maxTokens: number };
      await card.getByText(`${b.totalTokens.toLocaleString('en-US')} of ${b.maxTokens.toLocaleString('en-US')} tokens`).waitFor();
      await card.getByText(/finished/).waitFor();
      expect(await card.getByRole('button', { name: 'Raise budget' }).count(), id).toBe(0);
      expect(await card.getByLabel('New ceiling (tokens)').count(), id).toBe(0);
    }
    await page.goto(`${server.url}/threads/${exhaustedId}`);
    await card.getByText('0 of 1 tokens').waitFor();
    await card.getByRole('button', { name: 'Raise budget' }).waitFor();
    await card.getByLabel('New ceiling (tokens)').fill('50000');
    await card.getByRole('button', { name: 'Raise budget' }).click();
    await card.getByText('0 of 50,000 tokens').waitFor();
    expect((await server.api('GET', `/usage/threads/${exhaustedId}`)).body.maxTokens).toBe(50000);
  });

  it('reload: the dry-run diff names the fields that changed for an updated listener', async () => {
    const original = readFileSync(server.configPath, 'utf8');
    const edited = original.replace('prompt: You write short announcements.', 'prompt: You write very short announcements.').replace(/(name: writer[\s\S]*?model: )mock-1/, '$1mock-2');
    expect(edited).not.toBe(original);
    writeFileSync(server.configPath, edited);
    try {
      const plan = await server.api('POST', '/organism/reload?dryRun=true');
      expect(plan.status).toBe(200);
      expect(plan.body.updated).toEqual(['writer']);
      expect(plan.body.updatedFields).toEqual({ writer: ['prompt', 'model'] });
      await freshPage();
      await signIn(page, server.url, OP_TOKEN, '/config');
      await page.getByRole('button', { name: 'Reload' }).click();
      const dialog = page.getByRole('dialog', { name: 'Apply this reload?' });
      await dialog.getByText('~ updated writer: prompt, model').waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
    } finally {
      writeFileSync(server.configPath, original);
    }
  });

  it('config: the sanitized YAML with the snake_case keys of organism.yaml, full height, no secret, with a copy button', async () => {
    const yaml = await fetch(`${server.url}/api/v1/organism/config?format=yaml`, { headers: { Authorization: `Bearer ${OP_TOKEN}` } });
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toContain('yaml');
    const text = await yaml.text();
    expect(text).toContain('max_tokens_per_thread: 20000');
    expect(text).toContain('token_env: CONSOLE_OP_TOKEN');
    expect(text).not.toContain(OP_TOKEN);
    expect(text).not.toMatch(/maxTokensPerThread|tokenEnv/);
    const bad = await fetch(`${server.url}/api/v1/organism/config?format=toml`, { headers: { Authorization: `Bearer ${OP_TOKEN}` } });
    expect(bad.status).toBe(422);

    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/config');
    const view = page.getByRole('region', { name: 'organism.yaml (sanitized)' });
    await view.getByText('max_tokens_per_thread: 20000').waitFor();
    await view.getByText('token_env: CONSOLE_OP_TOKEN').waitFor();
    await view.getByText('prompt: You research questions. Send what you find to the writer.').waitFor();
    expect(await page.getByText('maxTokensPerThread').count()).toBe(0);
    expect(await page.content()).not.toContain(OP_TOKEN);
    // Full height: the whole document shows, no inner scroll box.
    const box = await view.locator('pre').evaluate((el) => ({ client: el.clientHeight, scroll: el.scrollHeight }));
    expect(box.client).toBeGreaterThan(300);
    expect(box.scroll).toBeLessThanOrEqual(box.client + 1);
    await view.getByRole('button', { name: 'Copy' }).click();
    await view.getByText('Copied').waitFor();
    const copied = await page.evaluate('navigator.clipboard.readText()');
    expect(copied).toBe(text);
  });

  it('journal: no Redeliver for a killed thread; a refusal is an error with the server reason', async () => {
    // A killed thread's entry (its queued message FAILED with reason killed).
    const killed = await threadWaitingOnWriter('killed before the writer');
    expect((await server.api('POST', `/threads/${killed.threadId}/kill`)).status).toBe(200);
    await eventually(async () => (await entryState(killed.writerEntry)) === 'FAILED', 'the killed entry FAILED');
    // A FAILED entry of a thread that is still active (its writer message waits).
    const open = await threadWaitingOnWriter('killed after the page loaded');
    const failed = await inject('flaky', { Announcement: { text: 'fails in an open thread' } }, { threadId: open.threadId });
    await eventually(async () => (await entryState(failed.messageId)) === 'FAILED', 'flaky entry FAILED');
    expect(await threadStatus(open.threadId)).toBe('active');

    await freshPage();
    // Live frames are held back from the page (a page that has not heard the kill yet); REST is untouched.
    let hold = false;
    const held: Array<() => void> = [];
    await page.routeWebSocket(/\/ws$/, (ws) => {
      const srv = ws.connectToServer();
      srv.onMessage((m) => (hold ? held.push(() => ws.send(m)) : ws.send(m)));
    });
    await signIn(page, server.url, OP_TOKEN, `/journal?state=FAILED`);
    const table = page.getByRole('table', { name: 'Journal entries' });
    const killedRow = table.getByRole('row').filter({ hasText: killed.threadId.slice(-8) });
    await killedRow.getByText('thread killed').waitFor();
    expect(await page.getByRole('button', { name: `Redeliver ${killed.writerEntry}` }).count()).toBe(0);
    expect(await page.getByRole('checkbox', { name: `Select ${killed.writerEntry}` }).count()).toBe(0);

    const button = page.getByRole('button', { name: `Redeliver ${failed.messageId}` });
    await button.waitFor();
    hold = true;
    expect((await server.api('POST', `/threads/${open.threadId}/kill`)).status).toBe(200);
    watch.allow(/status of 409/);
    await button.click();
    const alert = page.getByRole('alert').filter({ hasText: `Thread ${open.threadId} was killed` });
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Redelivered 0 of 1');
    expect(await page.getByRole('status').filter({ hasText: 'Redelivered 0 of 1' }).count()).toBe(0);
    hold = false;
    for (const f of held.splice(0)) f();
    await server.api('POST', '/agents/writer/resume');
  });

  it('agent page: the tool call senders use, the system prompt, XML only where it is received; overview sparklines have axes', async () => {
    await freshPage();
    await signIn(page, server.url, OP_TOKEN, '/agents/writer');
    const prompt = page.getByRole('region', { name: 'System prompt' });
    await prompt.getByText('You write short announcements.').waitFor();
    const call = page.getByRole('region', { name: 'How it is called' });
    await call.getByText('send_to_writer').first().waitFor();
    await call.getByText(/send_to_writer\(\{\s+"topic":/).waitFor();
    await call
      .getByText(/tool call/)
      .first()
      .waitFor();
    // Every sender of the writer answers with tool calls: no XML example.
    expect(await page.getByText('<Findings>').count()).toBe(0);
    await page.getByRole('region', { name: 'Answers with' }).getByText('send_to_announcer').waitFor();

    await page.goto(`${server.url}/`);
    for (const name of ['Messages per second', 'Tokens per second']) {
      const chart = page.getByRole('img', { name });
      await chart.locator('.u-axis').first().waitFor();
      expect(await chart.locator('.u-axis').count(), name).toBe(2);
      // uPlot draws the tick labels on the canvas; each shown axis is an element with room for them.
      for (const axis of await chart.locator('.u-axis').all()) {
        const box = await axis.boundingBox();
        expect(Math.min(box?.width ?? 0, box?.height ?? 0), name).toBeGreaterThan(10);
      }
    }
  });

  // Last: the server process is replaced by this test (SIGHUP: drain, then a new server process).
  it('a SIGHUP drain shows draining, in the header and the overview alike, then Live and running again', async () => {
    // A code tool that holds its delivery until the test releases it, so the drain lasts.
    const release = path.join(server.dir, 'release');
    writeFileSync(
      path.join(server.dir, 'hold.ts'),
      `import { existsSync } from 'node:fs';\nexport const hold = async (_p: unknown, ctx: { signal: AbortSignal }) => {\n  while (!existsSync(${JSON.stringify(release)}) && !ctx.signal.aborted) await new Promise((r) => setTimeout(r, 50));\n};\n`,
    );
    const original = readFileSync(server.configPath, 'utf8');
    writeFileSync(server.configPath, `${original}\n  - name: holder\n    description: Holds its delivery\n    handler: ./hold.ts#hold\n    payload: Announcement\n    peers: []\n`);
    expect((await server.api('POST', '/organism/reload')).status).toBe(200);

    await freshPage();
    watch.allow(/WebSocket connection to .* failed|Failed to load resource|ERR_CONNECTION_REFUSED|status of 503/);
    await signIn(page, server.url, OP_TOKEN, '/');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor();
    const organism = page.getByRole('region', { name: 'Organism' });
    await organism.getByText('running').waitFor();
    await inject('holder', { Announcement: { text: 'hold on' } });
    await eventually(async () => (await server.api('GET', '/agents/holder')).body.state === 'processing', 'holder in flight');

    server.proc.kill('SIGHUP');
    await page.getByRole('status', { name: 'Connection: Draining' }).waitFor();
    await organism.getByText('draining').waitFor();
    expect(await organism.getByText('stopped').count()).toBe(0);
    expect(await organism.getByText('stopping').count()).toBe(0);

    writeFileSync(release, '');
    await page.getByRole('status', { name: 'Connection: Live' }).waitFor({ timeout: 60_000 });
    await organism.getByText('running').waitFor({ timeout: 30_000 });
  });
});
