// The LLM call inspector in real Chromium against a real `organism serve`: a real MCP server
// (Streamable HTTP, the MCP tests' own), the mock provider scripted into a repair round, and a
// provider at a closed port (every attempt fails).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { startHttpMcpServer } from '../mcp/fixtures/mcp-server.js';
import { eventually, launchBrowser, OP_TOKEN, signIn, startServer, VIEW_TOKEN, watchErrors, type Server } from './harness.js';
import { closedPort, INVESTIGATOR_PROMPT, inspectorYaml, writeInspectorOrganism } from './inspector-organism.js';

/** Waits for the page to show it (vitest's default of 1 s is short for a loaded machine). */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 100 });

let mcp: Awaited<ReturnType<typeof startHttpMcpServer>>;
let server: Server;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let watch: ReturnType<typeof watchErrors>;
let investigated: string;
let offline: string;
let guarded: string;

const settled = async (to: string, text: string) => {
  const r = await server.api('POST', '/inject', { to, payload: { text } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const threadId = r.body.threadId as string;
  await eventually(async () => (await server.api('GET', `/threads/${threadId}`)).body.status !== 'active', `the ${to} thread to settle`, 60_000);
  return threadId;
};

beforeAll(async () => {
  mcp = await startHttpMcpServer();
  server = await startServer([], { prepare: writeInspectorOrganism(inspectorYaml(mcp.url, await closedPort())) });
  browser = await launchBrowser();
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  investigated = await settled('investigator', 'tide pools');
  offline = await settled('offline', 'anyone there?');
  guarded = await settled('guarded', 'tell me the secret plans');
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await mcp?.close();
});

afterEach(async () => {
  const unexpected = watch?.unexpected() ?? [];
  await page?.close();
  expect(unexpected, 'page errors and console errors').toEqual([]);
});

async function openAs(token: string, at: string): Promise<Page> {
  page = await browser.context.newPage();
  watch = watchErrors(page);
  await signIn(page, server.url, token, at);
  return page;
}

// A ceiling for a multi-step browser test on a loaded machine (another test file may share it);
// every wait inside is on what the page shows, with a deadline of its own.
describe('the LLM call inspector', { timeout: 120_000 }, () => {
  it('thread page: an MCP call, a refused answer and its repair round, each opening to the prompt, the tool call arguments and the tool result', async () => {
    expect((await server.api('GET', `/threads/${investigated}`)).body.status).toBe('completed');
    const p = await openAs(OP_TOKEN, `/threads/${investigated}`);
    const inspector = p.getByRole('region', { name: 'LLM call inspector' });
    const calls = inspector.locator('li.llm-call');
    await poll(() => calls.count()).toBe(3);
    const heads = inspector.locator('.llm-call-head');
    expect(await heads.nth(0).textContent()).toContain('facts_lookup');
    expect(await heads.nth(2).textContent()).toContain('repair');
    expect(await heads.nth(1).textContent()).not.toContain('repair');

    // The first call: the prompt as sent, the MCP call it asked for, run with its arguments and result.
    await heads.nth(0).click();
    const first = calls.nth(0);
    const system = first.getByRole('figure', { name: 'system prompt' });
    await poll(() => system.textContent()).toContain(INVESTIGATOR_PROMPT);
    // The system prompt is long: collapsed first, whole once expanded.
    expect(await system.textContent()).not.toContain('## Your peers');
    await system.getByRole('button', { name: 'Expand system prompt' }).click();
    await poll(() => system.textContent()).toContain('## Your peers');
    expect(await first.getByRole('figure', { name: 'user turn' }).textContent()).toContain('tide pools');
    const offered = await first.getByRole('region', { name: 'Tools offered' }).textContent();
    for (const tool of ['facts_lookup', 'send_to_announcer', 'reply']) expect(offered).toContain(tool);
    const mcpRun = first.getByRole('listitem', { name: 'MCP facts.lookup' });
    expect(await mcpRun.getByRole('figure', { name: 'lookup arguments' }).textContent()).toContain('"topic": "tide pools"');
    expect(await mcpRun.getByRole('figure', { name: 'lookup result' }).textContent()).toContain('Facts about tide pools: it is well documented.');
    expect(await mcpRun.textContent()).toMatch(/\d+ ms/);
    // Usage, cost, latency, provider, finish reason.
    const facts = await first.locator('.llm-facts').textContent();
    expect(facts).toMatch(/Provider\s*mock/);
    expect(facts).toMatch(/Finish reason\s*tool_calls/);
    expect(facts).toMatch(/Usage\s*\d+ in, \d+ out/);
    expect(facts).toMatch(/Cost\s*\$\d/);
    expect(facts).toMatch(/Repair\s*no/);

    // The second: its send was refused (a field the payload does not have).
    await heads.nth(1).click();
    const second = calls.nth(1);
    expect(await second.getByRole('group', { name: 'Tool call send_to_announcer' }).textContent()).toContain('"headline": "Found tide pools"');

    // The repair round: the refusal in the thread the model saw, the corrected arguments, the code tool's delivery.
    await heads.nth(2).click();
    const repair = calls.nth(2);
    const facts3 = await repair.locator('.llm-facts').textContent();
    expect(facts3).toMatch(/Repair\s*yes/);
    expect(await repair.getByRole('region', { name: 'Messages sent' }).textContent()).toContain('Not sent. Fix these and call again');
    const args = repair.getByRole('group', { name: 'Tool call send_to_announcer' }).getByRole('figure', { name: 'send_to_announcer arguments' });
    expect(await args.textContent()).toContain('"text": "Report on tide pools: well documented"');
    // JSON is highlighted: the key and the string are spans of their own.
    expect(await args.locator('.j-key').first().textContent()).toBe('"text"');
    const delivery = repair.getByRole('listitem', { name: 'Delivery to announcer' });
    expect(await delivery.textContent()).toMatch(/code tool[\s\S]*ACKED/);

    // Copy puts the arguments on the clipboard, as shown.
    await args.getByRole('button', { name: 'Copy send_to_announcer arguments' }).click();
    await poll(() => p.evaluate('navigator.clipboard.readText()')).toBe(JSON.stringify({ text: 'Report on tide pools: well documented' }, null, 2));
  });

  it('a failed provider call (provider down) appears, each attempt with its error, on the thread page and on the agent page', async () => {
    expect((await server.api('GET', `/threads/${offline}`)).body.status).toBe('error');
    const p = await openAs(OP_TOKEN, `/threads/${offline}`);
    const inspector = p.getByRole('region', { name: 'LLM call inspector' });
    const calls = inspector.locator('li.llm-call');
    await poll(() => calls.count()).toBe(2);
    for (const i of [0, 1]) expect(await calls.nth(i).locator('.llm-call-head').textContent()).toMatch(new RegExp(`down · down-1[\\s\\S]*attempt ${i + 1}[\\s\\S]*failed`));
    await calls.nth(1).locator('.llm-call-head').click();
    expect(await calls.nth(1).getByRole('alert').textContent()).toMatch(/Error: network error/);
    expect(await calls.nth(1).getByRole('region', { name: 'Answer' }).textContent()).toContain('No answer: the attempt failed.');
    // The request it tried to send is there all the same.
    expect(await calls.nth(1).getByRole('figure', { name: 'user turn' }).textContent()).toContain('anyone there?');

    await p.goto(`${server.url}/agents/offline`);
    const agentInspector = p.getByRole('region', { name: 'LLM call inspector' });
    await poll(() => agentInspector.locator('li.llm-call').count()).toBe(2);
    const newest = agentInspector.locator('li.llm-call').first();
    expect(await newest.locator('.llm-call-head').textContent()).toMatch(/attempt 2[\s\S]*failed/);
    await newest.locator('.llm-call-head').click();
    expect(await newest.getByRole('alert').textContent()).toMatch(/network error/);
    expect(await newest.getByRole('link', { name: offline }).count()).toBe(1);
  });

  it('a guard failure: the thread page shows reason guardrail with the guard and its reason, and the call refused before any provider request', async () => {
    expect((await server.api('GET', `/threads/${guarded}`)).body.status).toBe('error');
    const p = await openAs(OP_TOKEN, `/threads/${guarded}`);
    await poll(() => p.getByText(/guardrail: Guard forbidden blocked the input of agent guarded: matches the forbidden pattern "secret plans"/).count()).toBeGreaterThan(0);
    const inspector = p.getByRole('region', { name: 'LLM call inspector' });
    const calls = inspector.locator('li.llm-call');
    await poll(() => calls.count()).toBe(1);
    const head = calls.nth(0).locator('.llm-call-head');
    expect(await head.textContent()).toContain('guardrail: forbidden (input)');
    expect(await head.textContent()).not.toContain('attempt');
    await head.click();
    expect(await calls.nth(0).getByRole('alert').textContent()).toMatch(
      /guardrail forbidden blocked the input \(nothing was sent to the provider\): matches the forbidden pattern "secret plans"/,
    );
    // What would have been sent is shown all the same.
    expect(await calls.nth(0).getByRole('figure', { name: 'user turn' }).textContent()).toContain('tell me the secret plans');
  });

  it('a viewer sees a note instead of the calls (the API answers 403)', async () => {
    expect((await server.api('GET', `/threads/${investigated}/llm-calls`, undefined, VIEW_TOKEN)).status).toBe(403);
    const p = await openAs(VIEW_TOKEN, `/threads/${investigated}`);
    const inspector = p.getByRole('region', { name: 'LLM call inspector' });
    await poll(() => inspector.getByRole('note').textContent()).toContain('shown to operators only');
    expect(await inspector.locator('li.llm-call').count()).toBe(0);
    await p.goto(`${server.url}/agents/investigator`);
    await poll(async () => (await p.getByRole('region', { name: 'LLM call inspector' }).getByRole('note').count()) === 1).toBe(true);
  });
});

describe('llm.record: metadata', () => {
  it('each call says its content was not recorded', async () => {
    const other = await startServer([], { prepare: writeInspectorOrganism(inspectorYaml(mcp.url, await closedPort(), 'metadata')) });
    try {
      const r = await other.api('POST', '/inject', { to: 'investigator', payload: { text: 'kelp' } });
      const threadId = r.body.threadId as string;
      await eventually(async () => (await other.api('GET', `/threads/${threadId}`)).body.status === 'completed', 'the thread to complete', 60_000);
      page = await browser.context.newPage();
      watch = watchErrors(page);
      await signIn(page, other.url, OP_TOKEN, `/threads/${threadId}`);
      const calls = page.getByRole('region', { name: 'LLM call inspector' }).locator('li.llm-call');
      await poll(() => calls.count()).toBe(3);
      await calls.nth(0).locator('.llm-call-head').click();
      expect(await calls.nth(0).getByRole('note').textContent()).toContain('Content not recorded (llm.record: metadata)');
      expect(await calls.nth(0).getByRole('region', { name: 'Messages sent' }).count()).toBe(0);
      expect(await calls.nth(0).getByRole('group', { name: 'Tool call facts_lookup' }).textContent()).toContain('arguments not recorded');
    } finally {
      await page?.close();
      await other.stop();
    }
  }, 120_000);
});
