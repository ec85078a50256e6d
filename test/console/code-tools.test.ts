// An agent's code tool (`tools:` in organism.yaml) in the console, in real Chromium against a
// real `organism serve`: the LLM call inspector lists its execution (badge `code`, its name and
// module, arguments and result) and the waterfall gives it a tool bar named after it.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { consoleFile, eventually, OP_TOKEN } from './harness.js';

const YAML = `organism: {name: code-tools-console}
auth:
  tokens:
    - {name: ops, role: operator, token_env: CONSOLE_OP_TOKEN}
    - {name: watcher, role: viewer, token_env: CONSOLE_VIEW_TOKEN}
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        desk:
          - calls: [{name: lookupOrder, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Found: {{result}}'}}]
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

const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 100 });

let threadId: string;

const file = consoleFile({
  prepare: (dir) => {
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'order-tools.ts'), TOOLS);
  },
  ready: async (server) => {
    threadId = (await server.api('POST', '/inject', { to: 'desk', payload: { text: 'A-1' } })).body.threadId as string;
    await eventually(async () => (await server.api('GET', `/threads/${threadId}`)).body.status === 'completed', 'the thread to complete', 60_000);
  },
});

describe('code tools in the console', { timeout: 120_000 }, () => {
  it('the LLM call inspector shows the code tool execution; the waterfall has its bar', async () => {
    const page = await file.open(OP_TOKEN, `/threads/${threadId}`);
    const inspector = page.getByRole('region', { name: 'LLM call inspector' });
    const calls = inspector.locator('li.llm-call');
    await poll(() => calls.count()).toBe(2);
    await inspector.locator('.llm-call-head').first().click();
    const run = calls.first().getByRole('listitem', { name: 'Code tool lookupOrder' });
    await poll(() => run.textContent()).toMatch(/code\s*lookupOrder\s*\.\/order-tools\.ts\s*\d+ ms/);
    expect(await run.getByRole('figure', { name: 'lookupOrder arguments' }).textContent()).toContain('"orderId": "A-1"');
    expect(await run.getByRole('figure', { name: 'lookupOrder result' }).textContent()).toContain('{"orderId":"A-1","status":"shipped"}');

    const tool = page.locator('.wf-row[data-kind="tool"]');
    await poll(() => tool.count()).toBe(1);
    expect(await tool.locator('.wf-seg').getAttribute('title')).toMatch(/^Tool lookupOrder \d+ ms$/);
    await tool.locator('.wf-label').click();
    await poll(() => page.locator('.wf-details').textContent()).toContain('lookupOrder (code, ./order-tools.ts)');
  });
});
