import { expect, it } from 'vitest';
import type { Message } from '../../../src/core/message.js';
import type { ThreadHold } from '../../../src/core/thread.js';
import type { LlmCallRecord, ToolCallRecord } from '../../../src/llm/call-record.js';
import type { UsageEvent } from '../../../src/usage/types.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

/** Issue 30 on every durable store: thread holds outlive the process; erasure leaves no text and exact usage. */

const SECRET = 'Quillfeather-0xBEEF';

function msg(threadId: string, over: Partial<Message> = {}): Message {
  return {
    id: newId(),
    threadId,
    from: 'api',
    to: 'a',
    payloadType: 'Text',
    payload: { text: `tell ${SECRET}` },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: { orgId: 'acme' },
    attempt: 1,
    ...over,
  };
}

function usage(threadId: string, messageId: string): UsageEvent {
  return {
    id: newId(),
    timestamp: Date.now(),
    threadId,
    agentId: 'a',
    messageId,
    model: 'm',
    provider: 'p',
    promptTokens: 10,
    completionTokens: 5,
    totalTokens: 15,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    providerLatencyMs: 1,
    totalLatencyMs: 2,
    cost: 0.5,
    metadata: { orgId: 'acme' },
  };
}

function call(threadId: string, messageId: string): LlmCallRecord {
  return {
    id: newId(),
    threadId,
    messageId,
    agent: 'a',
    provider: 'p',
    model: 'm',
    responseModel: 'm',
    attempt: 1,
    repair: false,
    startedAt: Date.now(),
    latencyMs: 3,
    request: { messages: [{ role: 'user', content: `tell ${SECRET}` }] },
    tools: ['search'],
    response: { text: `told ${SECRET}`, toolCalls: [{ id: 'c1', name: 'search', arguments: `{"q":"${SECRET}"}` }], finishReason: 'stop' },
    usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null },
    cost: 0.5,
    error: null,
    maxOutputTokens: 64,
    overOutputCap: false,
  };
}

function tool(of: LlmCallRecord): ToolCallRecord {
  return {
    id: newId(),
    llmCallId: of.id,
    threadId: of.threadId,
    messageId: of.messageId,
    agent: 'a',
    server: 's',
    tool: 'search',
    arguments: { q: SECRET },
    result: `found ${SECRET}`,
    isError: false,
    error: null,
    startedAt: of.startedAt + 1,
    durationMs: 1,
  };
}

eachBackend('thread holds and erasure contract', (backend) => {
  it('a hold outlives the process; a resumed hold is kept (not held) with its baseline and factor', async () => {
    const place = backend.place();
    const s = await place.open();
    expect(await s.operator.heldThreads()).toEqual([]);
    const hold: ThreadHold = {
      threadId: 't-held',
      held: true,
      rule: 'cycle',
      reason: 'a -> b -> a repeated',
      evidence: { edges: [{ from: 'a', to: 'b' }], repetitions: 16 },
      by: 'loop_guard',
      heldAt: 1_700_000_000_000,
      resumedAt: null,
      resumedBy: null,
      limitFactor: 1,
    };
    await s.operator.setThreadHold(hold);
    await s.operator.setThreadHold({ ...hold, threadId: 't-other', rule: 'operator', evidence: null, by: 'ops', heldAt: hold.heldAt + 1 });
    await s.close();

    const t = await place.open();
    expect(await t.operator.threadHold('t-held')).toEqual(hold);
    expect((await t.operator.heldThreads()).map((h) => h.threadId)).toEqual(['t-held', 't-other']);
    await t.operator.setThreadHold({ ...hold, held: false, resumedAt: hold.heldAt + 10, resumedBy: 'ops', limitFactor: 2 });
    expect((await t.operator.heldThreads()).map((h) => h.threadId)).toEqual(['t-other']);
    await t.close();

    const u = await place.open();
    expect(await u.operator.threadHold('t-held')).toMatchObject({ held: false, resumedAt: hold.heldAt + 10, resumedBy: 'ops', limitFactor: 2 });
    expect(await u.operator.threadHold('nothing')).toBeNull();
  });

  it("erasure: the thread's text is gone from every table, usage and billing are unchanged, states and times stay, the erasure is recorded", async () => {
    const place = backend.place();
    const s = await place.open();
    const threadId = `t-${newId()}`;
    const root = msg(threadId);
    const reply = msg(threadId, { from: 'a', to: 'b', parentId: root.id, hops: 1, payload: { text: `reply ${SECRET}`, nested: { deep: [SECRET] } } });
    const other = msg('t-kept', { payload: { text: 'another thread keeps its text' } });
    await s.journal.pending([root, other]);
    await s.journal.dispatched(root);
    const c = call(threadId, root.id);
    s.llmCalls.recordCall(c);
    s.llmCalls.recordTool(tool(c));
    await s.journal.acked(root, [reply], [usage(threadId, root.id)]);
    await s.journal.dispatched(reply);
    await s.journal.failed(reply, 'handler_error', `it broke on ${SECRET}`, [], []);
    await s.usage.flush();
    const before = {
      entries: (await s.journal.list({ threadId, limit: 10, offset: 0, order: 'oldest' })).items,
      usage: await s.usage.threadUsage([threadId]),
      billing: await s.usage.billing({}),
    };
    const texts = async () => {
      const found: string[] = [];
      for (const table of await tables(place)) {
        const rows = await place.rows(`SELECT * FROM ${table}`);
        if (JSON.stringify(rows).includes(SECRET)) found.push(table);
      }
      return found;
    };
    expect((await texts()).sort()).toEqual(['journal', 'llm_calls', 'llm_tool_calls']);

    const erasure = await s.eraser.erase(threadId, 'ops', 1_700_000_000_000);
    expect(erasure).toEqual({ threadId, by: 'ops', at: 1_700_000_000_000, messages: 2, llmCalls: 1, toolCalls: 1, events: 0 });
    expect(await texts()).toEqual([]);
    const after = (await s.journal.list({ threadId, limit: 10, offset: 0, order: 'oldest' })).items;
    expect(after.map((e) => [e.message.id, e.state, e.attempts, e.createdAt, e.ackedAt, e.failedAt, e.failureReason])).toEqual(
      before.entries.map((e) => [e.message.id, e.state, e.attempts, e.createdAt, e.ackedAt, e.failedAt, e.failureReason]),
    );
    expect(after.map((e) => e.message.payload)).toEqual([{ erased: true }, { erased: true }]);
    expect(after[1]!.error).toBe('[erased]');
    expect(await s.usage.threadUsage([threadId])).toEqual(before.usage);
    expect(await s.usage.billing({})).toEqual(before.billing);
    const calls = await s.llmCalls.forThread(threadId, { limit: 10, offset: 0 });
    expect(calls.calls[0]).toMatchObject({ id: c.id, usage: c.usage, cost: 0.5, request: '[erased]', response: { text: '[erased]' } });
    expect(calls.tools[0]).toMatchObject({ arguments: '[erased]', result: '[erased]' });
    // Other threads keep their text.
    expect((await s.journal.get(other.id))!.message.payload).toEqual(other.payload);
    await s.close();

    const t = await place.open();
    expect(await t.eraser.erasureOf(threadId)).toEqual(erasure);
    expect(await t.eraser.erasureOf('t-kept')).toBeNull();
  });
});

/** The tables of the place's database (SQLite or the PostgreSQL schema). */
async function tables(place: { rows<T>(sql: string): Promise<T[]>; location: object }): Promise<string[]> {
  const names =
    'dataDir' in place.location
      ? await place.rows<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      : await place.rows<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'");
  return names.map((r) => r.name);
}
