import { LOOP_GUARD_DEFAULTS } from '../../src/config/loop-guard.js';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { definePayload } from '../../src/payload/define.js';
import { BUDGET_WARNING_TYPE, SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { openAiOk, startProtocolServer } from '../llm/protocol-server.js';
import { eventually, listener, mockProvider, settled, startOrganism, Text } from '../pump/harness.js';

const Task = definePayload('Task', { goal: 'string', priority: 'integer?' });
const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

/** These tests drive the XML reply format, chosen here as the provider's default (tool-agent.test.ts covers `tools`). */
function openAi(url: string) {
  return { ...mockProvider(), name: 'local', type: 'openai' as const, baseUrl: url, maxRetries: 0, replyFormat: 'xml' as const };
}

describe('builtin:llm agents', () => {
  it('prompts with its own instructions and its declared peers only, then routes the XML reply', async () => {
    const s = await startProtocolServer([{ body: openAiOk('Sure.\n<send to="worker"><Task><goal>count sheep</goal><priority>2</priority></Task></send>') }]);
    servers.push(s);
    const got: unknown[] = [];
    const { organism } = await startOrganism(
      [
        listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'You delegate work.', model: 'gpt-4o', description: 'the boss' }),
        listener('worker', { payload: 'Task', description: 'does tasks', handler: (p) => void got.push(p) }),
        listener('secret', { description: 'TOP SECRET listener' }),
      ],
      { llm: { providers: [openAi(s.url)], pricing: {} } },
      {},
      [Text, Task],
    );
    const { threadId } = await organism.inject('boss', { text: 'please help' });
    await settled(organism, threadId);
    expect(got).toEqual([{ goal: 'count sheep', priority: 2 }]);
    const body = s.seen[0]!.body as { messages: Array<{ role: string; content: string }> };
    const system = body.messages[0]!.content;
    expect(system).toContain('You delegate work.');
    expect(system).toContain('### worker');
    expect(system).toContain('<xs:complexType name="TaskType">');
    expect(system).not.toContain('secret');
    expect(system).not.toContain('TOP SECRET');
    expect(body.messages.at(-1)!.content).toContain('<text>please help</text>');
  });

  it('gives an invalid reply one repair round with the validation errors', async () => {
    const s = await startProtocolServer([
      { body: openAiOk('<send to="worker"><Task><priority>high</priority></Task></send>') },
      { body: openAiOk('<send to="worker"><Task><goal>fixed</goal></Task></send>') },
    ]);
    servers.push(s);
    const got: unknown[] = [];
    const { organism } = await startOrganism(
      [listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'p', model: 'gpt-4o' }), listener('worker', { payload: 'Task', handler: (p) => void got.push(p) })],
      { llm: { providers: [openAi(s.url)], pricing: {} } },
      {},
      [Text, Task],
    );
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'fixed' }]);
    const repair = (s.seen[1]!.body as { messages: Array<{ content: string }> }).messages.at(-1)!.content;
    expect(repair).toContain('goal: required field missing');
    expect(repair).toContain('priority: expected integer, got "high"');
  });

  it('a second invalid reply fails the delivery with a SystemError to the sender', async () => {
    const s = await startProtocolServer([{ body: openAiOk('I will not use XML.') }]);
    servers.push(s);
    const { organism, events } = await startOrganism([listener('boss', { handler: null, agent: true, peers: [], prompt: 'p', model: 'gpt-4o' })], {
      llm: { providers: [openAi(s.url)], pricing: {} },
    });
    const { threadId } = await organism.inject('boss', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(s.seen).toHaveLength(2);
    expect(thread.error).toContain(Errors.LLM_INVALID_REPLY('boss', 'no <send>, <reply> or <done/> element found').detail);
    expect(events.some((e) => e.type === 'message' && e.message.to === 'api' && e.message.payloadType === SYSTEM_ERROR_TYPE)).toBe(true);
  });

  it('shows the waiting state during the LLM call; kill aborts the call in flight', async () => {
    const s = await startProtocolServer([{ body: openAiOk('<done/>'), delayMs: 30_000 }]);
    servers.push(s);
    const { organism, events } = await startOrganism([listener('boss', { handler: null, agent: true, peers: [], prompt: 'p', model: 'gpt-4o' })], {
      llm: { providers: [openAi(s.url)], pricing: {} },
    });
    const { threadId } = await organism.inject('boss', { text: 'go' });
    await eventually(() => organism.agent('boss').state === 'waiting');
    await eventually(() => s.seen.length === 1, 10_000, 'the request to reach the provider');
    await organism.killThread(threadId);
    await eventually(() => s.aborted === 1, 10_000, 'the provider request to be cancelled');
    await eventually(() => events.some((e) => e.type === 'journal_failed' && e.reason === 'killed'));
    expect((await organism.thread(threadId))?.status).toBe('killed');
    await eventually(() => organism.agent('boss').state === 'idle');
  });
});

describe('budgets in the pump', () => {
  // An identical ping-pong until the budget (or the hop limit) ends it: the loop breaker would
  // hold it first, which is its job (test/service/safety.test.ts); here the budget is under test.
  const loopGuard = { ...LOOP_GUARD_DEFAULTS, enabled: false };
  const script = { talker: ['<send to="talker2"><Text><text>{{text}}</text></Text></send>'], talker2: ['<send to="talker"><Text><text>{{text}}</text></Text></send>'] };
  const agents = () => [
    listener('talker', { handler: null, agent: true, peers: ['talker2'], prompt: 'Talk.', model: 'mock-1', maxOutputTokens: 20 }),
    listener('talker2', { handler: null, agent: true, peers: ['talker'], prompt: 'Talk.', model: 'mock-1', maxOutputTokens: 20 }),
  ];

  it('delivers each threshold once as a BudgetWarning message, then exhausts with a SystemError; raising the ceiling lets the thread go on', async () => {
    const { organism, events } = await startOrganism(agents(), { loopGuard, maxTokensPerThread: 2_000, llm: { providers: [mockProvider(script)], pricing: {} } });
    const { threadId } = await organism.inject('talker', { text: 'hello there' });
    const thread = await settled(organism, threadId);
    const warnings = events.filter((e) => e.type === 'message' && e.state === 'PENDING' && e.message.payloadType === BUDGET_WARNING_TYPE);
    expect(warnings.map((w) => (w.type === 'message' ? w.message.payload['severity'] : ''))).toEqual(['warning', 'critical', 'final']);
    expect(events.filter((e) => e.type === 'budget_warning')).toHaveLength(3);
    // Exhaustion: the agent is told, the thread stays visible with its reason and its budget.
    expect(thread.status).toBe('error');
    expect(thread.error).toMatch(/^Token budget exhausted for thread/);
    expect(events.some((e) => e.type === 'journal_failed' && e.reason === 'budget_exhausted')).toBe(true);
    const budget = (await organism.budgets.get(threadId))!;
    expect(budget.totalTokens).toBeLessThanOrEqual(2_000);
    // An operator raises the ceiling and the conversation continues.
    organism.setThreadBudget(threadId, 100_000);
    await organism.inject('talker', { text: 'go on' }, { threadId });
    const resumed = await settled(organism, threadId);
    expect((await organism.threadUsage(threadId))?.totalTokens).toBeGreaterThan(budget.totalTokens + 2_000);
    // This time the conversation ran into the hop limit, which ends the thread in error.
    expect(resumed.error).toBe(Errors.HOP_LIMIT(50, threadId).detail);
    await organism.stop();
  });

  it('a completed thread keeps its budget, no longer live; the next inject into it spends the same budget', async () => {
    const { organism } = await startOrganism([listener('solo', { handler: null, agent: true, peers: [], prompt: 'p', model: 'mock-1' })], {
      llm: { providers: [mockProvider({ solo: ['<done/>', '<done/>'] })], pricing: {} },
    });
    const { threadId } = await organism.inject('solo', { text: 'x' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    const first = await organism.budgets.get(threadId);
    expect(first).toMatchObject({ active: false });
    expect(first!.totalTokens).toBeGreaterThan(0);
    expect(await organism.budgets.count()).toBe(0);
    await organism.inject('solo', { text: 'y' }, { threadId });
    await eventually(() => organism.tracker.agent('solo').requestCount === 2 && organism.activeThreads === 0, 10_000, 'the second exchange');
    expect((await settled(organism, threadId)).status).toBe('completed');
    const second = await organism.budgets.get(threadId);
    expect(second).toMatchObject({ active: false });
    expect(second!.totalTokens).toBeGreaterThan(first!.totalTokens);
    await organism.stop();
  });
});
