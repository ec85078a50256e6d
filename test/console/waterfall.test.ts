// The thread waterfall (console/src/views/thread/Waterfall.tsx) in real Chromium against a real
// `organism serve`: one bar per delivery and per LLM/tool call (counted against the API), a
// failed and redelivered delivery marked, and bars added live while a thread runs.
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHttpMcpServer } from '../mcp/fixtures/mcp-server.js';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer, VIEW_TOKEN, watchErrors, type Server } from './harness.js';
import { prepare, startGate, type Gate } from './waterfall-fixture.js';

interface Waterfall {
  deliveries: Array<{ messageId: string; state: string; attempts: number }>;
  calls: Array<{ toolExecutions: unknown[] }>;
}

let server: Server;
let mcp: Awaited<ReturnType<typeof startHttpMcpServer>>;
let gate: Gate;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let watch: ReturnType<typeof watchErrors>;

beforeAll(async () => {
  mcp = await startHttpMcpServer();
  gate = await startGate();
  server = await startServer([], { prepare: prepare(mcp.url, gate.url) });
  browser = await launchBrowser();
}, 90_000);
afterAll(async () => {
  gate?.release();
  await browser?.close();
  await server?.stop();
  await gate?.close();
  await mcp?.close();
});
afterEach(async () => {
  const unexpected = watch?.unexpected() ?? [];
  await page?.close();
  expect(unexpected, 'page errors and console errors').toEqual([]);
});

async function open(threadId: string, token = OP_TOKEN): Promise<Page> {
  page = await browser.context.newPage();
  watch = watchErrors(page);
  await signIn(page, server.url, token, `/threads/${threadId}`);
  await page.getByRole('list', { name: 'Waterfall' }).waitFor();
  return page;
}

const rows = (p: Page, kind: 'delivery' | 'llm' | 'tool') => p.locator(`.wf-row[data-kind="${kind}"]`);
const waterfall = async (threadId: string): Promise<Waterfall> => (await server.api<Waterfall>('GET', `/threads/${threadId}/waterfall`, undefined, VIEW_TOKEN)).body;
const settled = (threadId: string) => eventually(async () => (await server.api('GET', `/threads/${threadId}`)).body.status !== 'active', `thread ${threadId} to finish`, 60_000);

describe('thread waterfall', () => {
  it('shows one bar per delivery, per LLM call and per MCP tool call, as many as the API gives; a bar opens its numbers (as a viewer too)', async () => {
    const { threadId } = (await server.api('POST', '/inject', { to: 'scout', payload: { text: 'octopuses' } })).body as { threadId: string };
    await settled(threadId);
    const w = await waterfall(threadId);
    expect(w.deliveries).toHaveLength(2); // api -> scout, scout -> announcer
    expect(w.calls).toHaveLength(2); // the lookup round and the report round
    const tools = w.calls.reduce((n, c) => n + c.toolExecutions.length, 0);
    expect(tools).toBe(1);
    expect(mcp.calls).toContain('lookup');

    const p = await open(threadId, VIEW_TOKEN);
    await eventually(async () => (await rows(p, 'delivery').count()) === w.deliveries.length, 'a row per delivery');
    expect(await rows(p, 'llm').count()).toBe(w.calls.length);
    expect(await rows(p, 'tool').count()).toBe(tools);
    // Each delivery's bar is its queue wait and its handler time; each call has one bar.
    for (const r of await rows(p, 'delivery').all()) {
      expect(await r.locator('.wf-queue').count()).toBe(1);
      expect(await r.locator('.wf-ok').count()).toBe(1);
    }
    expect(await p.locator('.wf-row[data-kind="llm"] .wf-llm').count()).toBe(2);
    expect(await p.locator('.wf-row[data-kind="tool"] .wf-tool').count()).toBe(1);
    // Calls sit under their delivery: api -> scout, its two calls, the lookup, then scout -> announcer.
    const order = await p.locator('.wf-row').evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
    expect(order).toEqual(['delivery', 'llm', 'tool', 'llm', 'delivery']);
    expect(await p.getByText('Tools').count()).toBeGreaterThan(0);

    // Hover says the numbers; a click opens them.
    expect(await rows(p, 'llm').first().locator('.wf-seg').getAttribute('title')).toMatch(/^LLM call \d+ ms$/);
    await rows(p, 'tool').first().locator('.wf-label').click();
    const details = p.getByRole('definition').filter({ hasText: 'facts · lookup (MCP)' });
    await details.waitFor();
    await expect(p.locator('.wf-details').textContent()).resolves.toMatch(/Duration\s*\d+ ms/);
    await rows(p, 'llm').first().locator('.wf-label').click();
    await expect(p.locator('.wf-details').textContent()).resolves.toMatch(/Model\s*mock-1 \(mock\)[\s\S]*Latency\s*\d+ ms[\s\S]*Tokens\s*\d+ in \/ \d+ out[\s\S]*Finish reason\s*tool_calls/);
  }, 120_000);

  it('marks a failed delivery, and each attempt of one redelivered', async () => {
    const { threadId, messageId } = (await server.api('POST', '/inject', { to: 'flaky', payload: { text: 'boom' } })).body as { threadId: string; messageId: string };
    await settled(threadId);
    const p = await open(threadId);
    const row = rows(p, 'delivery').first();
    await row.getByText('failed: handler_error').waitFor();
    expect(await row.getAttribute('data-failed')).toBe('true');
    expect(await row.locator('.wf-failed').count()).toBe(1);

    // Redelivered: it fails again. The page follows live: two attempts, each failed, on one bar.
    expect((await server.api('POST', `/journal/${messageId}/redeliver`)).status).toBe(200);
    await eventually(async () => (await waterfall(threadId)).deliveries[0]?.attempts === 2 && (await waterfall(threadId)).deliveries[0]?.state === 'FAILED', 'the second attempt to fail');
    await row.getByText('attempt 1 failed').waitFor();
    await row.getByText('attempt 2', { exact: true }).waitFor();
    // Still one bar for that delivery (each failure also tells the sender: a delivery of its own).
    const w = await waterfall(threadId);
    expect(w.deliveries.filter((d) => d.messageId === messageId)).toHaveLength(1);
    await eventually(async () => (await rows(p, 'delivery').count()) === w.deliveries.length, 'a row per delivery');
    expect(await row.locator('.wf-failed').count()).toBe(2);
    expect(await row.locator('.wf-queue').count()).toBe(2);
    await row.locator('.wf-label').click();
    await expect(p.locator('.wf-details').textContent()).resolves.toMatch(
      /State\s*FAILED, 2 attempts[\s\S]*Attempt 1\s*queued \d+ ms, ran \d+ ms, failed \(handler_error\)[\s\S]*flaky by design/,
    );
  }, 120_000);

  it('grows live while the thread runs: the running delivery, then the bars its release adds, without a reload', async () => {
    const { threadId } = (await server.api('POST', '/inject', { to: 'holder', payload: { text: 'now' } })).body as { threadId: string };
    await eventually(() => gate.waiting() > 0, 'the holder to wait at the gate');
    const p = await open(threadId);
    const first = rows(p, 'delivery').first();
    await first.getByText('running').waitFor();
    expect(await rows(p, 'delivery').count()).toBe(1);
    // The running bar grows with the clock.
    // The title says "850 ms", then "1.23 s": read it in milliseconds (a bare number would go from 850 to 1).
    const runningFor = async () => {
      const m = /Handler running: ([\d.]+) (ms|s)\b/.exec((await first.locator('.wf-run').getAttribute('title')) ?? '');
      return m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : Number.NaN;
    };
    const before = await runningFor();
    await eventually(async () => (await runningFor()) > before, 'the running bar to grow');

    let navigations = 0;
    p.on('framenavigated', () => navigations++);
    gate.release();
    await settled(threadId);
    // holder -> announcer appears, and the first delivery is acked, on the open page.
    await eventually(async () => (await rows(p, 'delivery').count()) === 2, 'the second delivery bar');
    await first.locator('.wf-ok').waitFor();
    expect(await first.getByText('running').count()).toBe(0);
    expect((await waterfall(threadId)).deliveries.map((d) => d.state)).toEqual(['ACKED', 'ACKED']);
    expect(navigations).toBe(0);
  }, 120_000);
});
