import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadOrganism } from '../../src/config/load.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { Organism } from '../../src/organism/organism.js';
import { anthropicOk, startAnthropicServer } from '../llm/servers/anthropic-server.js';
import { openAiOk, startOpenAiServer } from '../llm/servers/openai-server.js';
import type { ScriptedReply, ScriptedServer } from '../llm/servers/scripted-server.js';
import { eventually, settled } from '../pump/harness.js';

/**
 * Code tools inside an agent's turn, end to end: organism.yaml and a tools module in a project
 * directory, loaded as `organism serve` loads them, the agent talking to a local server that
 * speaks the provider's wire protocol. The tools module reports to the test through `probe`.
 */
interface Probe {
  calls: Array<[string, unknown]>;
  /** Set by the test: called when `slow` starts, and when its signal aborts (with the reason). */
  started?: () => void;
  aborted?: (reason: unknown) => void;
  answers: unknown[];
}
const g = globalThis as { codeToolProbe?: Probe };
let probe: Probe;

const TOOLS_MODULE = `
import { defineTool, definePayload, type Handler } from 'organism';

const probe = () => (globalThis as any).codeToolProbe;

export const OrderQuery = definePayload('OrderQuery', { orderId: 'string' }, { description: 'Which order' });

/** Carries its schema (defineTool). */
export const lookupOrder = defineTool({
  description: 'Looks an order up by its id',
  input: definePayload('OrderLookup', { orderId: 'string', withItems: 'boolean?' }),
  run: async ({ orderId }: { orderId: string }, ctx) => {
    probe().calls.push(['lookupOrder', { orderId, thread: ctx.threadId, agent: ctx.agent }]);
    return { orderId, status: 'shipped', items: 2 };
  },
});

/** A plain async function: its input type is given in organism.yaml. */
export async function findOrder(input: { orderId: string }) {
  probe().calls.push(['findOrder', input]);
  return 'order ' + input.orderId + ' is on its way';
}

export async function failing(input: { orderId: string }) {
  probe().calls.push(['failing', input]);
  throw new Error('the order database is down');
}

/** Runs until its signal aborts. */
export const slow = defineTool({
  description: 'Takes its time',
  input: definePayload('SlowInput', {}),
  run: (_input, { signal }) =>
    new Promise((_resolve, reject) => {
      probe().calls.push(['slow', {}]);
      signal.addEventListener('abort', () => {
        probe().aborted?.(signal.reason);
        reject(new Error('stopped'));
      });
      probe().started?.();
    }),
});

export const collect: Handler = (payload) => {
  probe().answers.push(payload);
};
`;

function config(provider: string, extra: string[] = []): string {
  return [
    'organism: {name: desk}',
    'llm:',
    '  providers:',
    `    - ${provider}`,
    'payloads:',
    '  Ticket: {fields: {text: string}}',
    '  Answer: {fields: {text: string}}',
    'listeners:',
    '  - name: desk',
    '    handler: builtin:llm',
    '    prompt: You answer tickets about orders.',
    '    model: gpt-4o',
    '    payload: Ticket',
    '    peers: [outbox]',
    '    timeout_seconds: 60',
    ...extra.map((l) => `    ${l}`),
    '    tools:',
    '      - ./tools.ts#lookupOrder',
    '      - {use: ./tools.ts#findOrder, input: OrderQuery, description: Finds an order}',
    '      - {use: ./tools.ts#failing, input: OrderQuery}',
    '      - ./tools.ts#slow',
    '      - {use: ./tools.ts#slow, name: quick, timeout_seconds: 0.05}',
    '  - name: outbox',
    '    handler: ./tools.ts#collect',
    '    payload: Answer',
    '',
  ].join('\n');
}

const cleanup: Array<() => Promise<unknown> | unknown> = [];
beforeEach(() => {
  probe = { calls: [], answers: [] };
  g.codeToolProbe = probe;
});
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
  delete g.codeToolProbe;
});

async function server(start: Promise<ScriptedServer>): Promise<ScriptedServer> {
  const s = await start;
  cleanup.push(() => s.close());
  return s;
}

/** The project on disk, loaded and started. */
async function start(provider: string, extra: string[] = []) {
  const dir = mkdtempSync(path.join(tmpdir(), 'code-tools-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'organism.yaml'), config(provider, extra));
  writeFileSync(path.join(dir, 'tools.ts'), TOOLS_MODULE);
  const organism = new Organism(await loadOrganism(path.join(dir, 'organism.yaml')));
  const events: OrganismEvent[] = [];
  organism.bus.on((e) => events.push(e));
  await organism.start();
  cleanup.push(() => organism.stop({ timeoutMs: 2_000 }));
  return { organism, events, dir };
}

const openAi = (url: string) => `{name: local, type: openai, base_url: ${url}, models: [gpt-4o], max_retries: 0}`;
const anthropic = (url: string) => `{name: claude, type: anthropic, base_url: ${url}, max_retries: 0}`;
const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
const openAiCalls = (...calls: ReturnType<typeof call>[]): ScriptedReply => ({ body: openAiOk(null, {}, 'gpt-4o', calls) });
const toolUse = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });

type OpenAiBody = { messages: Array<Record<string, unknown>>; tools: Array<{ function: { name: string; description: string; parameters: Record<string, unknown> } }> };
type AnthropicBody = { messages: Array<{ role: string; content: unknown }> };

describe('code tools inside the turn (OpenAI Chat Completions)', () => {
  it('the model calls a defineTool tool, gets its result as JSON and answers; no hop, no new delivery; the call is recorded under toolExecutions', async () => {
    const s = await server(
      startOpenAiServer({
        replies: [openAiCalls(call('call_1', 'lookupOrder', { orderId: 'A-1' })), openAiCalls(call('call_2', 'send_to_outbox', { text: 'A-1 has shipped (2 items)' }))],
      }),
    );
    const { organism, events } = await start(openAi(s.url));
    const { threadId, messageId } = await organism.inject('desk', { text: 'Where is order A-1?' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(probe.answers).toEqual([{ text: 'A-1 has shipped (2 items)' }]);
    expect(probe.calls).toEqual([['lookupOrder', { orderId: 'A-1', thread: threadId, agent: 'desk' }]]);

    // Offered beside send_to_<peer> and reply, with the input type's JSON Schema as parameters.
    const first = s.seen[0]!.body as OpenAiBody;
    expect(first.tools.map((t) => t.function.name)).toEqual(['send_to_outbox', 'reply', 'lookupOrder', 'findOrder', 'failing', 'slow', 'quick']);
    const lookup = first.tools[2]!.function;
    expect(lookup.description).toBe('Looks an order up by its id');
    expect(lookup.parameters).toMatchObject({ type: 'object', properties: { orderId: { type: 'string' }, withItems: { type: ['boolean', 'null'] } }, required: ['orderId'] });
    expect(lookup.parameters).not.toHaveProperty('$schema');
    expect(first.tools[3]!.function).toMatchObject({ description: 'Finds an order', parameters: { properties: { orderId: { type: 'string' } } } });

    // The result goes back to the model in the same delivery.
    const second = s.seen[1]!.body as OpenAiBody;
    expect(second.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '{"orderId":"A-1","status":"shipped","items":2}' });
    const messages = new Map(events.flatMap((e) => (e.type === 'message' ? [[e.message.id, `${e.message.from}->${e.message.to}`] as const] : [])));
    expect([...messages.values()]).toEqual(['api->desk', 'desk->outbox']);

    const { calls, tools } = await organism.llmCalls.forMessage(messageId);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.tools).toContain('lookupOrder');
    expect(tools).toEqual([
      expect.objectContaining({
        llmCallId: calls[0]!.id,
        threadId,
        messageId,
        agent: 'desk',
        kind: 'code',
        server: './tools.ts',
        tool: 'lookupOrder',
        arguments: { orderId: 'A-1' },
        result: '{"orderId":"A-1","status":"shipped","items":2}',
        isError: false,
        error: null,
      }),
    ]);
    expect(tools[0]!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('a plain function given an input type: its string result goes back as it is', async () => {
    const s = await server(startOpenAiServer({ replies: [openAiCalls(call('c1', 'findOrder', { orderId: 'B-2' })), { body: openAiOk('Done.') }] }));
    const { organism } = await start(openAi(s.url));
    const { threadId } = await organism.inject('desk', { text: 'B-2?' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(probe.calls).toEqual([['findOrder', { orderId: 'B-2' }]]);
    expect((s.seen[1]!.body as OpenAiBody).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'order B-2 is on its way' });
  });

  it('arguments that fail the input type never reach the function: the errors go back to the model as the tool result', async () => {
    const s = await server(
      startOpenAiServer({ replies: [openAiCalls(call('c1', 'findOrder', { order: 7 })), openAiCalls(call('c2', 'findOrder', { orderId: 'C-3' })), { body: openAiOk('Done.') }] }),
    );
    const { organism } = await start(openAi(s.url));
    const { threadId, messageId } = await organism.inject('desk', { text: 'C-3?' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(probe.calls).toEqual([['findOrder', { orderId: 'C-3' }]]);
    const error = 'Tool findOrder was called with invalid arguments: order: unknown field (OrderQuery has: orderId); orderId: required field missing';
    expect((s.seen[1]!.body as OpenAiBody).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c1', content: error });
    const { tools } = await organism.llmCalls.forMessage(messageId);
    expect(tools.map((t) => [t.tool, t.isError, t.error])).toEqual([
      ['findOrder', true, error],
      ['findOrder', false, null],
    ]);
  });

  it('a tool past its timeout_seconds is aborted (its signal says why) and the model gets the timeout as an error result', async () => {
    const s = await server(startOpenAiServer({ replies: [openAiCalls(call('c1', 'quick', {})), { body: openAiOk('It took too long.') }] }));
    const reasons: unknown[] = [];
    probe.aborted = (reason) => reasons.push(reason);
    const { organism, events } = await start(openAi(s.url));
    const { threadId, messageId } = await organism.inject('desk', { text: 'D-4?' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(reasons).toEqual([expect.objectContaining({ code: 'CODE_TOOL_TIMEOUT', message: 'Tool quick timed out after 0.05 s' })]);
    expect((s.seen[1]!.body as OpenAiBody).messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c1', content: 'Tool quick timed out after 0.05 s' });
    expect((await organism.llmCalls.forMessage(messageId)).tools[0]).toMatchObject({ kind: 'code', tool: 'quick', isError: true, error: 'Tool quick timed out after 0.05 s', result: null });
    expect(events.some((e) => e.type === 'journal_failed')).toBe(false);
  });

  it('max_tool_rounds counts rounds of code tool calls', async () => {
    const s = await server(startOpenAiServer({ replies: [openAiCalls(call('c1', 'findOrder', { orderId: 'E-5' }))] }));
    const { organism } = await start(openAi(s.url), ['max_tool_rounds: 2']);
    const { threadId } = await organism.inject('desk', { text: 'E-5?' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain('Agent desk used more than 2 rounds of tool calls (max_tool_rounds) in one delivery');
    expect(probe.calls).toHaveLength(2);
  });

  it('a reload loads edited tool code: the agent is updated (handler code) and its next delivery runs the new function', async () => {
    const reply = [openAiCalls(call('c1', 'lookupOrder', { orderId: 'H-8' })), { body: openAiOk('Done.') }];
    const s = await server(startOpenAiServer({ replies: [...reply, ...reply] }));
    const { organism, dir } = await start(openAi(s.url));
    const first = await organism.inject('desk', { text: 'H-8?' });
    expect((await settled(organism, first.threadId)).status).toBe('completed');
    expect((s.seen[1]!.body as OpenAiBody).messages.at(-1)).toMatchObject({ content: '{"orderId":"H-8","status":"shipped","items":2}' });

    const file = path.join(dir, 'tools.ts');
    writeFileSync(file, readFileSync(file, 'utf8').replace("status: 'shipped'", "status: 'delivered'"));
    const result = organism.reload(await loadOrganism(path.join(dir, 'organism.yaml')));
    expect(result.updated).toEqual(['desk', 'outbox']); // outbox's handler is in the same module
    expect(result.updatedFields['desk']).toEqual(['handler code']);
    const second = await organism.inject('desk', { text: 'H-8 again?' });
    expect((await settled(organism, second.threadId)).status).toBe('completed');
    expect((s.seen[3]!.body as OpenAiBody).messages.at(-1)).toMatchObject({ content: '{"orderId":"H-8","status":"delivered","items":2}' });
  });

  it('killing the thread mid-call aborts the tool (its signal fires) and the call is recorded as aborted', async () => {
    const s = await server(startOpenAiServer({ replies: [openAiCalls(call('c1', 'slow', {})), { body: openAiOk('never asked') }] }));
    let started = false;
    const reasons: unknown[] = [];
    probe.started = () => {
      started = true;
    };
    probe.aborted = (reason) => reasons.push(reason);
    const { organism } = await start(openAi(s.url));
    const { threadId, messageId } = await organism.inject('desk', { text: 'F-6?' });
    await eventually(() => started, 10_000, 'the tool to start');
    await organism.killThread(threadId);
    await eventually(() => reasons.length === 1, 10_000, 'the tool to see the abort');
    expect(reasons).toEqual(['killed']);
    await eventually(async () => (await organism.llmCalls.forMessage(messageId)).tools.length === 1, 10_000, 'the aborted call to be recorded');
    expect((await organism.llmCalls.forMessage(messageId)).tools[0]).toMatchObject({ kind: 'code', tool: 'slow', isError: true, result: null, error: 'Aborted: killed' });
    expect((await organism.thread(threadId))?.status).toBe('killed');
    expect(s.seen).toHaveLength(1); // the model is not asked again
  });
});

describe('code tools inside the turn (Anthropic Messages)', () => {
  it('a tool that throws: its error goes back to the model as a tool_result with is_error, and the model answers', async () => {
    const s = await server(
      startAnthropicServer({
        replies: [
          { body: anthropicOk([{ type: 'text', text: 'Let me look.' }, toolUse('toolu_1', 'failing', { orderId: 'G-7' })]) },
          { body: anthropicOk([toolUse('toolu_2', 'send_to_outbox', { text: 'Our order system is down; we will write back.' })]) },
        ],
      }),
    );
    const { organism } = await start(anthropic(s.url));
    const { threadId, messageId } = await organism.inject('desk', { text: 'G-7?' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(probe.calls).toEqual([['failing', { orderId: 'G-7' }]]);
    expect(probe.answers).toEqual([{ text: 'Our order system is down; we will write back.' }]);
    const last = (s.seen[1]!.body as AnthropicBody).messages.at(-1)!;
    expect(last).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Tool failing failed: the order database is down', is_error: true }] });
    expect((await organism.llmCalls.forMessage(messageId)).tools).toEqual([
      expect.objectContaining({ kind: 'code', tool: 'failing', arguments: { orderId: 'G-7' }, isError: true, result: null, error: 'Tool failing failed: the order database is down' }),
    ]);
  });
});
