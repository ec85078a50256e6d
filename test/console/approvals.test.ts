// Tool calls that wait for a person's approval (issue 25) in the console, in real Chromium
// against a real `organism serve`: an LLM agent (mock provider) proposes a code tool call listed
// in its `approval:`; an approver edits its arguments through the generated form and approves
// (the tool runs with the edited value), an operator rejects one on the thread page (the model
// answers again), a viewer sees the proposed call and nothing to act on.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { consoleFile, eventually, OP_TOKEN, VIEW_TOKEN, type Server } from './harness.js';

const APPROVER_TOKEN = 'console-approver-token-a81c';
// `serve` inherits the test's environment: the approver token's variable is set before it starts.
process.env['CONSOLE_APPROVER_TOKEN'] = APPROVER_TOKEN;

const YAML = `organism: {name: approvals-console}
auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}
    - {name: alice, role: approver, token_env: CONSOLE_APPROVER_TOKEN}
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        desk:
          - calls: [{name: lookupOrder, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Done: {{result}}'}}]
payloads:
  Ticket: {fields: {text: string}}
  Answer: {fields: {text: string}}
listeners:
  - name: desk
    handler: builtin:llm
    prompt: You answer tickets.
    model: mock-1
    payload: Ticket
    peers: [outbox]
    tools: [./order-tools.ts#lookupOrder]
    approval: [lookupOrder]
  - name: outbox
    handler: ./order-tools.ts#collect
    payload: Answer
`;

const TOOLS = `import { defineTool, definePayload, type Handler } from 'organism';
export const lookupOrder = defineTool({
  description: 'Looks an order up',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }) => ({ orderId, status: 'shipped' }),
});
export const collect: Handler = () => undefined;
`;

const file = consoleFile({
  prepare: (dir) => {
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'order-tools.ts'), TOOLS);
  },
});

/** Sends a ticket to the desk; resolves once its proposed lookupOrder call waits in the inbox. */
async function proposal(server: Server, text: string): Promise<{ threadId: string; id: string }> {
  const injected = await server.api('POST', '/inject', { to: 'desk', payload: { text } });
  expect(injected.status).toBe(200);
  const threadId: string = injected.body.threadId;
  const item = await eventually(async () => (await server.api('GET', `/inbox?kind=approval&threadId=${threadId}`)).body.items[0], `the approval of ${text}`, 60_000);
  expect(item).toMatchObject({ kind: 'approval', proposedCalls: [{ name: 'lookupOrder', arguments: { orderId: text } }] });
  return { threadId, id: item.id as string };
}

/** What the desk finally sent the outbox, once the thread completed. */
async function outboxText(server: Server, threadId: string): Promise<string> {
  await eventually(async () => (await server.api('GET', `/threads/${threadId}`)).body.status === 'completed', 'the thread to complete', 60_000);
  const messages = (await server.api('GET', `/threads/${threadId}/messages`)).body.messages as Array<{ to: string; payload: { text: string } }>;
  return messages.find((m) => m.to === 'outbox')!.payload.text;
}

const card = (page: Page, id: string) => page.getByRole('article', { name: `Inbox item ${id}` });

// A model round, a browser and a tool run each: more than the default 30 s on a busy machine.
describe('tool calls waiting for approval in the console', { timeout: 90_000 }, () => {
  it('an approver edits the proposed arguments in the generated form and approves: the tool runs with the edited value; a bad edit shows the 422 naming the field', async () => {
    const { threadId, id } = await proposal(file.server, 'A-1');
    const page = await file.open(APPROVER_TOKEN, '/inbox');
    await page.getByText('alice (approver)').waitFor();
    const item = card(page, id);
    await item.waitFor();
    // The agent, its thread, and the call it proposed.
    await item.getByText(/desk\s*asks to run a tool call/).waitFor();
    await item.getByRole('link', { name: threadId.slice(-8) }).waitFor();
    const call = item.getByRole('region', { name: 'Call 1: lookupOrder' });
    expect(await call.textContent()).toContain('"orderId": "A-1"');

    // Edit: the form generated from the tool's parameters, prefilled with the model's proposal.
    await item.getByRole('button', { name: 'Edit', exact: true }).click();
    const orderId = call.getByRole('textbox', { name: /^orderId/ });
    expect(await orderId.inputValue()).toBe('A-1');

    // An edit that does not meet the parameters (raw JSON): the server's 422, naming the field, in the item's form; nothing is decided.
    file.allow(/status of 422/);
    await call.getByRole('checkbox', { name: 'Raw JSON' }).check();
    const raw = call.getByRole('textbox', { name: /^arguments \(JSON\)/ });
    expect(JSON.parse(await raw.inputValue())).toEqual({ orderId: 'A-1' });
    await raw.fill('{"orderId": 5}');
    await item.getByRole('button', { name: 'Approve edited', exact: true }).click();
    const alert = item.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Error 422/);
    expect(await alert.textContent()).toContain('calls[0].arguments.orderId');
    expect((await file.server.api('GET', `/inbox?threadId=${threadId}`)).body.total).toBe(1);

    // Back to the form (it keeps what the JSON says), then the edit that runs.
    await call.getByRole('checkbox', { name: 'Raw JSON' }).uncheck();
    expect(await orderId.inputValue()).toBe('5');
    await orderId.fill('B-2');
    await item.getByRole('textbox', { name: /^Note/ }).fill('customer gave the new number');
    await item.getByRole('button', { name: 'Approve edited', exact: true }).click();
    await item.waitFor({ state: 'detached' });

    expect(await outboxText(file.server, threadId)).toBe('Done: {"orderId":"B-2","status":"shipped"}');
    const calls = (await file.server.api('GET', `/threads/${threadId}/llm-calls`)).body.calls as Array<{ toolExecutions?: Array<{ tool: string; arguments: unknown }> }>;
    const runs = calls.flatMap((c) => c.toolExecutions ?? []).filter((t) => t.tool === 'lookupOrder');
    expect(runs.map((t) => t.arguments)).toEqual([{ orderId: 'B-2' }]);
    expect((await file.server.api('GET', `/journal/${id}`)).body).toMatchObject({ closedBy: 'alice', closedNote: 'customer gave the new number' });
  });

  it('an operator rejects a proposed call on the thread page with a note: the model hears it and answers again', async () => {
    const { threadId } = await proposal(file.server, 'C-3');
    const page = await file.open(OP_TOKEN, `/threads/${threadId}`);
    const waiting = page.getByRole('list', { name: 'Timeline' }).getByRole('region', { name: 'Waiting for a person' });
    await waiting.getByRole('region', { name: 'Call 1: lookupOrder' }).waitFor();
    await waiting.getByRole('textbox', { name: 'Reason for rejecting' }).fill('wrong customer');
    await waiting.getByRole('button', { name: 'Reject', exact: true }).click();
    await waiting.waitFor({ state: 'detached' });
    // The model's next answer (its script's second turn) carries the refusal it was given as the tool's result.
    const text = await outboxText(file.server, threadId);
    expect(text).toContain('refused');
    expect(text).toContain('wrong customer');
    const calls = (await file.server.api('GET', `/threads/${threadId}/llm-calls`)).body.calls as Array<{ toolExecutions?: Array<{ tool: string }> }>;
    expect(calls.flatMap((c) => c.toolExecutions ?? []).filter((t) => t.tool === 'lookupOrder')).toEqual([]);
  });

  it("an approval decided meanwhile by someone else: approving shows the 409 in the item's form", async () => {
    const { id } = await proposal(file.server, 'D-4');
    const page = await file.open(OP_TOKEN, '/inbox');
    // Keep serving this page the list it first read, so the item stays on screen after another
    // decision closes it (the live refresh would otherwise take it away first).
    let first: string | null = null;
    await page.route(/\/api\/v1\/inbox(\?|$)/, async (route) => {
      if (first === null) first = await (await route.fetch()).text();
      await route.fulfill({ status: 200, contentType: 'application/json', body: first });
    });
    await page.reload();
    const item = card(page, id);
    await item.getByRole('button', { name: 'Approve', exact: true }).waitFor();
    expect((await file.server.api('POST', `/inbox/${id}/reject`, { note: 'first' })).status).toBe(200);
    file.allow(/status of 409/);
    await item.getByRole('button', { name: 'Approve', exact: true }).click();
    const alert = item.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Error 409/);
    await page.unroute(/\/api\/v1\/inbox(\?|$)/);
  });

  it('a viewer sees the proposed call read-only; an approver approves it as proposed on the thread page', async () => {
    const { threadId, id } = await proposal(file.server, 'V-9');
    const viewer = await file.open(VIEW_TOKEN, '/inbox');
    await viewer.getByText('watcher (viewer)').waitFor();
    const seen = card(viewer, id);
    await seen.getByRole('region', { name: 'Call 1: lookupOrder' }).waitFor();
    expect(await seen.textContent()).toContain('"orderId": "V-9"');
    await seen.getByText(/Read-only: your token has the viewer role/).waitFor();
    expect(await seen.getByRole('button').count()).toBe(0);
    expect(await seen.getByRole('textbox').count()).toBe(0);
    await viewer.close();

    const approver = await file.open(APPROVER_TOKEN, `/threads/${threadId}`);
    const inline = approver.getByRole('region', { name: 'Waiting for a person' });
    await inline.getByRole('button', { name: 'Edit', exact: true }).waitFor();
    await inline.getByRole('button', { name: 'Approve', exact: true }).click();
    await inline.waitFor({ state: 'detached' });
    expect(await outboxText(file.server, threadId)).toBe('Done: {"orderId":"V-9","status":"shipped"}');
  });
});
