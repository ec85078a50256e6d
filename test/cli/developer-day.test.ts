import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { ensureBuilt, linkDevModules, run, TOKEN } from './own-project.js';
import { freePort, startProcess, until } from './processes.js';

/**
 * Issue 26's first acceptance point: an application developer's project, written from README.md
 * and docs/*.md only, outside the clone: typed handlers (`defineHandler`, organism-env.d.ts)
 * whose misspelt peer and wrong field type fail the project's own `tsc`; a code tool called
 * inside an LLM turn (mock provider script); a listener of two payload types; a retry that
 * succeeds on attempt 3; an `on_error` route receiving the final failure. Served by `organism
 * serve` on its default SQLite store, read through the HTTP client.
 */

const ROOT = path.resolve('.');
const CLI = ['--import', import.meta.resolve('tsx'), path.join(ROOT, 'src/cli/main.ts')];

const YAML = `organism:
  name: developer-day

llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        desk:
          - calls: [{name: lookupOrder, arguments: {orderId: "{{order}}"}}]
          - '<send to="intake"><Approval><order>{{order}}</order><approved>true</approved></Approval></send>'

payloads:
  Ticket:
    description: A customer's ticket about an order
    fields:
      order: string
      text: string
  Approval:
    description: The desk's decision on a ticket
    fields:
      order: string
      approved: boolean
  Invoice:
    description: What to charge
    fields:
      order: string
      cents: integer
  Note:
    description: A line for the record
    fields:
      text: string

listeners:
  - name: intake
    description: Takes tickets, and the desk's approvals of them
    handler: ./handlers.ts#intake
    payload: [Ticket, Approval]
    peers: [desk, billing]

  - name: desk
    description: Looks the order up and approves
    handler: builtin:llm
    model: mock-small
    prompt: Look the order up with lookupOrder, then send intake your Approval.
    payload: Ticket
    peers: [intake]
    tools: [./tools.ts#lookupOrder]

  - name: billing
    description: Charges (its payment service fails twice)
    handler: ./handlers.ts#billing
    payload: Invoice
    peers: [archive]
    retry: {max_attempts: 3, backoff: fixed, initial_seconds: 0}

  - name: refunds
    description: Refunds (always fails)
    handler: ./handlers.ts#refunds
    payload: Invoice
    peers: [escalations]
    retry: {max_attempts: 2, backoff: fixed, initial_seconds: 0}
    on_error: escalations

  - name: escalations
    description: Told when refunds gives up
    handler: ./handlers.ts#escalations
    payload: [Invoice, SystemError]
    peers: [archive]

  - name: archive
    description: Keeps notes
    handler: ./handlers.ts#archive
    payload: Note
`;

const HANDLERS = `import { defineHandler } from 'organism';

export const intake = defineHandler('intake', (payload, ctx) => {
  if (ctx.payloadType === 'Approval') {
    return ctx.send('billing', { order: ctx.payload.order, cents: ctx.payload.approved ? 4200 : 0 });
  }
  return ctx.send('desk', { order: ctx.payload.order, text: ctx.payload.text });
});

export const billing = defineHandler('billing', (invoice, ctx) => {
  if (ctx.attempt < 3) throw new Error('payment service unavailable (attempt ' + ctx.attempt + ')');
  return ctx.send('archive', { text: 'charged ' + invoice.order + ' ' + invoice.cents + ' on attempt ' + ctx.attempt });
});

export const refunds = defineHandler('refunds', (invoice) => {
  throw new Error('refund of ' + invoice.order + ' refused by the bank');
});

export const escalations = defineHandler('escalations', {
  Invoice: () => undefined,
  SystemError: (failure, ctx) =>
    ctx.send('archive', { text: 'escalated: ' + failure.to + ' ' + failure.reason + ' after ' + failure.attempts + ': ' + failure.error }),
});

export const archive = defineHandler('archive', () => undefined);
`;

const TOOLS = `import { definePayload, defineTool } from 'organism';

export const lookupOrder = defineTool({
  description: 'Looks an order up by its id',
  input: definePayload('OrderLookup', { orderId: 'string' }),
  run: async ({ orderId }: { orderId: string }) => ({ orderId, status: 'shipped' }),
});
`;

/** Two mistakes a developer makes, each of which must fail tsc. */
const MISSPELT_PEER = `import { defineHandler } from 'organism';
export const typo = defineHandler('intake', (_payload, ctx) => ctx.send('biling', { order: 'A-1', cents: 1 }));
`;
const WRONG_FIELD_TYPE = `import { defineHandler } from 'organism';
export const typo = defineHandler('intake', (_payload, ctx) => ctx.send('billing', { order: 'A-1', cents: 'twelve' }));
`;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Msg {
  id: string;
  from: string;
  to: string;
  payloadType: string;
  payload: Record<string, unknown>;
  deliveryState: string;
}

describe("an application developer's day, from the docs, in a project outside the clone", () => {
  it('typed handlers (tsc catches a misspelt peer and a wrong field type), a code tool in the turn, a two-type listener, a retry that succeeds on attempt 3 and an on_error route, on the SQLite store', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'developer-day-'));
    dirs.push(dir);
    expect(dir.startsWith(ROOT)).toBe(false);

    const init = run(process.execPath, [...CLI, 'init', '.'], dir);
    expect(init.status, init.stderr).toBe(0);
    // The starter's own files are replaced by the application (its test names the starter's listeners).
    rmSync(path.join(dir, 'organism.test.ts'));
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'handlers.ts'), HANDLERS);
    writeFileSync(path.join(dir, 'tools.ts'), TOOLS);
    ensureBuilt(ROOT);
    linkDevModules(dir, ROOT);

    // check refreshes organism-env.d.ts and type-checks the handler and tool modules.
    const check = run(process.execPath, [...CLI, 'check', 'organism.yaml'], dir);
    expect(check.status, check.stdout + check.stderr).toBe(0);
    expect(existsSync(path.join(dir, 'organism-env.d.ts'))).toBe(true);
    const typecheck = run('npm', ['run', 'typecheck'], dir);
    expect(typecheck.status, typecheck.stdout + typecheck.stderr).toBe(0);

    // Each mistake fails the project's tsc, at the mistake.
    for (const [bad, expected] of [
      [MISSPELT_PEER, /typo\.ts\(2,\d+\): error TS\d+: .*"biling"/],
      [WRONG_FIELD_TYPE, /typo\.ts\(2,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/],
    ] as const) {
      writeFileSync(path.join(dir, 'typo.ts'), bad);
      const failed = run('npm', ['run', 'typecheck'], dir);
      expect(failed.status, failed.stdout + failed.stderr).not.toBe(0);
      expect(failed.stdout + failed.stderr).toMatch(expected);
      expect((failed.stdout + failed.stderr).match(/error TS/g)).toHaveLength(1);
    }
    rmSync(path.join(dir, 'typo.ts'));
    // organism check type-checks the modules organism.yaml names: the misspelt peer there fails it too (exit 3).
    writeFileSync(path.join(dir, 'handlers.ts'), HANDLERS.replace("ctx.send('billing'", "ctx.send('biling'"));
    const misspelt = run(process.execPath, [...CLI, 'check', 'organism.yaml'], dir);
    expect(misspelt.status, misspelt.stdout + misspelt.stderr).toBe(3);
    expect(misspelt.stdout + misspelt.stderr).toMatch(/handlers\.ts:5:\d+: TS\d+: .*"biling"/);
    writeFileSync(path.join(dir, 'handlers.ts'), HANDLERS);

    const port = await freePort();
    const server = startProcess(process.execPath, [...CLI, 'serve', 'organism.yaml', '--port', String(port), '--no-supervisor'], { cwd: dir, env: { ORGANISM_API_TOKEN: TOKEN } });
    children.push(server.child);
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN });
    await until(() => server.child.exitCode === null && client.health(), `the server to answer (output: ${server.output()})`);
    // The real store: SQLite in .organism/ beside organism.yaml.
    expect(existsSync(path.join(dir, '.organism'))).toBe(true);

    const settled = (threadId: string) =>
      until(async () => {
        const t = await client.threads.get(threadId);
        return t.status !== 'active' && t.status !== 'waiting' ? t : null;
      }, `thread ${threadId} to end (output: ${server.output()})`);
    const messages = async (threadId: string) => (await client.threads.messages(threadId, { limit: 100 })).messages as unknown as Msg[];

    // A ticket: intake (Ticket) -> desk (code tool in its turn) -> intake (Approval) -> billing (3 tries) -> archive.
    const { threadId } = await client.inject({ to: 'intake', payload: { Ticket: { order: 'A-7', text: 'where is my parcel?' } } });
    expect((await settled(threadId)).status).toBe('completed');
    const flow = await messages(threadId);
    expect(flow.map((m) => `${m.from}->${m.to} ${m.payloadType} ${m.deliveryState}`)).toEqual([
      'api->intake Ticket ACKED',
      'intake->desk Ticket ACKED',
      'desk->intake Approval ACKED',
      'intake->billing Invoice ACKED',
      'billing->archive Note ACKED',
    ]);
    // The two-type listener handled both of its types (the Approval's fields came through).
    expect(flow[3]!.payload).toEqual({ order: 'A-7', cents: 4200 });

    // The code tool ran inside the desk's turn: recorded under the LLM call that asked for it.
    const calls = (await client.threads.llmCalls(threadId)).calls as unknown as Array<{ agent: string; toolExecutions: Array<Record<string, unknown>> }>;
    expect(calls.map((c) => c.agent)).toEqual(['desk', 'desk']);
    expect(calls[0]!.toolExecutions).toEqual([
      expect.objectContaining({ kind: 'code', server: './tools.ts', tool: 'lookupOrder', arguments: { orderId: 'A-7' }, isError: false, error: null }),
    ]);
    expect(JSON.stringify(calls[0]!.toolExecutions[0]!['result'])).toContain('shipped');
    expect(calls[1]!.toolExecutions).toEqual([]);

    // The retry: one journal entry, three attempts, the handler saw ctx.attempt 3.
    const charged = await client.journal.get(flow[3]!.id);
    expect(charged).toMatchObject({ deliveryState: 'ACKED', attempts: 3 });
    expect((charged as unknown as { earlierAttempts: Array<{ outcome: string }> }).earlierAttempts.map((a) => a.outcome)).toEqual(['failed', 'failed']);
    expect(flow[4]!.payload).toEqual({ text: 'charged A-7 4200 on attempt 3' });

    // on_error: refunds always throws; after its 2 tries escalations gets the SystemError.
    const refund = await client.inject({ to: 'refunds', payload: { Invoice: { order: 'B-2', cents: 990 } } });
    expect((await settled(refund.threadId)).status).toBe('error');
    const failed = await messages(refund.threadId);
    const first = failed[0]!;
    expect(await client.journal.get(first.id)).toMatchObject({ deliveryState: 'FAILED', failureReason: 'handler_error', attempts: 2 });
    const routed = failed.find((m) => m.from === 'refunds' && m.to === 'escalations');
    expect(routed).toMatchObject({ payloadType: 'SystemError', deliveryState: 'ACKED', payload: { messageId: first.id, to: 'refunds', reason: 'handler_error', attempts: 2 } });
    const escalated = failed.find((m) => m.from === 'escalations' && m.to === 'archive');
    expect(escalated).toMatchObject({ deliveryState: 'ACKED' });
    expect(String(escalated!.payload['text'])).toMatch(/^escalated: refunds handler_error after 2: .*refused by the bank/);

    await client.organism.stop();
    expect(await server.exited).toBe(0);
  }, 300_000);
});
