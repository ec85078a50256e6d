import fc from 'fast-check';
import { expect, it } from 'vitest';
import { Errors } from '../../../src/errors/catalogue.js';
import type { LlmCallRecord, ToolCallRecord } from '../../../src/llm/call-record.js';
import type { Message } from '../../../src/core/message.js';
import type { JournalQuery } from '../../../src/core/journal.js';
import type { UsageEvent } from '../../../src/usage/types.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

const DAY = 86_400_000;

function msg(over: Partial<Message> = {}): Message {
  return {
    id: newId(),
    threadId: 't1',
    from: 'api',
    to: 'a',
    payloadType: 'Text',
    payload: { text: 'x' },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: { orgId: 'acme' },
    attempt: 1,
    ...over,
  };
}

function usage(messageId: string | null, over: Partial<UsageEvent> = {}): UsageEvent {
  return {
    id: newId(),
    timestamp: Date.now(),
    threadId: 't1',
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
    ...over,
  };
}

function call(messageId: string, threadId = 't1'): LlmCallRecord {
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
    request: { q: 1 },
    tools: [],
    response: { text: 'hi', toolCalls: [], finishReason: 'stop' },
    usage: null,
    cost: null,
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
    arguments: { q: 'x' },
    result: 'r',
    isError: false,
    error: null,
    startedAt: of.startedAt + 1,
    durationMs: 1,
  };
}

eachBackend('journal contract', (backend) => {
  it('moves entries PENDING -> DISPATCHED -> ACKED, committing outgoing messages and usage with the ack', async () => {
    const s = await backend.place().open();
    const m = msg({ traceContext: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    await s.journal.pending([m]);
    expect((await s.journal.get(m.id))?.state).toBe('PENDING');
    void s.journal.dispatched(m);
    const out = msg({ from: 'a', to: 'b', parentId: m.id, hops: 1, payload: { z: 1, a: { nested: [1, 'two'] } } });
    await s.journal.acked(m, [out], [usage(m.id)]);
    const entry = await s.journal.get(m.id);
    expect(entry).toMatchObject({ state: 'ACKED', attempts: 1, message: m });
    expect(entry?.ackedAt).toBeTypeOf('number');
    const outEntry = await s.journal.get(out.id);
    expect(outEntry?.state).toBe('PENDING');
    expect(JSON.stringify(outEntry?.message.payload)).toBe(JSON.stringify(out.payload)); // key order kept
    expect((await s.usage.history({ limit: 10, offset: 0 })).total).toBe(1);
  });

  it('a failure commits its outgoing messages and usage too, with reason and error', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    await s.journal.dispatched(m);
    const notice = msg({ from: 'system.pump', to: 'api' });
    await s.journal.failed(m, 'timeout', 'took too long', [notice], [usage(m.id)]);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'FAILED', failureReason: 'timeout', error: 'took too long' });
    expect((await s.journal.get(notice.id))?.state).toBe('PENDING');
    expect((await s.usage.billing({})).requestCount).toBe(1);
  });

  it('failedThreads names the threads among those asked with an entry FAILED other than by a kill', async () => {
    const s = await backend.place().open();
    const [failed, killed, acked, retried, other] = ['t-failed', 't-killed', 't-acked', 't-retried', 't-other'].map((threadId) => msg({ threadId }));
    await s.journal.pending([failed!, killed!, acked!, retried!, other!]);
    await s.journal.failed(failed!, 'handler_error', 'boom', [], []);
    await s.journal.failed(killed!, 'killed', 'gone', [], []);
    await s.journal.acked(acked!, [], []);
    // Failed, then redelivered: no longer FAILED.
    await s.journal.failed(retried!, 'timeout', 'slow', [], []);
    await s.journal.redeliver(retried!.id);
    await s.journal.failed(other!, 'handler_error', 'boom', [], []);
    const asked = ['t-failed', 't-killed', 't-acked', 't-retried', 't-none', "t-'quote"];
    expect([...(await s.journal.failedThreads(asked))].sort()).toEqual(['t-failed']);
    expect([...(await s.journal.failedThreads([]))]).toEqual([]);
    // Any number of ids in one read.
    const many = Array.from({ length: 5_000 }, (_, i) => `t-${i}`);
    expect([...(await s.journal.failedThreads([...many, 't-other']))]).toEqual(['t-other']);
  });

  it('an ack or failure of a message never journaled inserts it first; a dispatch does not undo an ack', async () => {
    const s = await backend.place().open();
    const a = msg();
    const b = msg();
    await s.journal.acked(a, [], []);
    await s.journal.failed(b, 'killed', 'gone', [], []);
    expect(await s.journal.get(a.id)).toMatchObject({ state: 'ACKED' });
    expect(await s.journal.get(b.id)).toMatchObject({ state: 'FAILED', failureReason: 'killed' });
    await s.journal.dispatched(a);
    expect((await s.journal.get(a.id))?.state).toBe('ACKED');
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 0, DISPATCHED: 0, AWAITING: 0, ACKED: 1, FAILED: 1 });
  });

  it('group-commits concurrent writers: all resolve, all durable, in order', async () => {
    const s = await backend.place().open();
    const messages = Array.from({ length: 200 }, (_, i) => msg({ payload: { text: String(i) } }));
    await Promise.all(messages.map((m) => s.journal.pending([m])));
    const page = await s.journal.list({ limit: 500, offset: 0, order: 'oldest' });
    expect(page.total).toBe(200);
    expect(page.items.map((e) => e.message.payload['text'])).toEqual(messages.map((_, i) => String(i)));
  });

  it('a write that fails inside a group commit fails alone; the others commit and count once', async () => {
    const s = await backend.place().open();
    const good = msg({ from: 'api', to: 'a' });
    const bad = { ...msg({ from: 'api', to: 'b', threadId: 't2' }), payload: { n: 1n } } as unknown as Message; // JSON.stringify throws
    const results = await Promise.allSettled([s.journal.pending([good]), s.journal.pending([bad]), s.journal.pending([msg({ from: 'a', to: 'a' })])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(0);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 2, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 0 });
  });

  it("an outcome whose guard refuses as its group commit begins writes nothing and rejects with the guard's error (a kill answered meanwhile wins)", async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    await s.journal.dispatched(m);
    let killed = false;
    const guard = () => (killed ? Errors.THREAD_KILLED(m.threadId) : null);
    const out = msg({ from: 'a', to: 'b', parentId: m.id, hops: 1 });
    const ack = s.journal.acked(m, [out], [usage(m.id)], guard);
    killed = true; // after the ack was queued, before its transaction began
    await expect(ack).rejects.toMatchObject({ code: 'THREAD_KILLED' });
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'DISPATCHED' });
    expect(await s.journal.get(out.id)).toBeNull();
    expect((await s.usage.billing({})).requestCount).toBe(0);
    await s.journal.failed(m, 'killed', 'gone', [], [], () => null);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'FAILED', failureReason: 'killed' });
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 0, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 1 });
  });

  it('an outcome its guard drops, queued in the same commit as its DISPATCHED mark, leaves the mark written with the attempt counted', async () => {
    const s = await backend.place().open();
    const m = msg({ attempt: 2 });
    await s.journal.pending([m]);
    let killed = false;
    const dispatched = s.journal.dispatched(m); // not awaited: the mark and the outcome share a group commit
    const ack = s.journal.acked(m, [], [usage(m.id)], () => (killed ? Errors.THREAD_KILLED(m.threadId) : null));
    killed = true;
    await dispatched;
    await expect(ack).rejects.toMatchObject({ code: 'THREAD_KILLED' });
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'DISPATCHED', attempts: 2 });
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 0, DISPATCHED: 1, AWAITING: 0, ACKED: 0, FAILED: 0 });
  });

  it('a redelivered ack does not bill its usage twice', async () => {
    const s = await backend.place().open();
    const m = msg();
    const u = usage(m.id);
    await s.journal.pending([m]);
    await s.journal.acked(m, [], [u]);
    await s.journal.acked(m, [], [u]);
    expect((await s.usage.billing({})).requestCount).toBe(1);
    expect((await s.usage.daily({})).days.reduce((n, d) => n + d.requestCount, 0)).toBe(1);
  });

  it('recovers PENDING in order, DISPATCHED with attempt + 1, and fails those past max attempts; the report survives a reopen', async () => {
    const place = backend.place();
    const s = await place.open();
    const a = msg({ payload: { text: 'a' } });
    const b = msg({ payload: { text: 'b' } });
    const c = msg({ payload: { text: 'c' }, attempt: 3 });
    await s.journal.pending([a, b, c]);
    await s.journal.dispatched(b);
    await s.journal.dispatched(c);
    await s.close(); // as if the process died here

    const t = await place.open();
    const { messages, report } = await t.journal.recover('boot-2', 3);
    expect(messages.map((m) => [m.payload['text'], m.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
    expect(report).toMatchObject({ bootId: 'boot-2', pending: 1, redelivered: 1, failedMaxAttempts: 1 });
    expect(await t.journal.get(c.id)).toMatchObject({
      state: 'FAILED',
      failureReason: 'max_attempts',
      error: 'Gave up after 3 interrupted attempt(s) (journal.max_attempts = 3)',
    });
    expect((await t.journal.stats()).counts).toEqual({ PENDING: 2, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 1 });
    expect((await t.journal.keptStats()).counts).toEqual({ PENDING: 2, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 1 });
    await t.close();
    const u = await place.open();
    expect((await u.journal.stats()).lastRecovery).toMatchObject({ bootId: 'boot-2', redelivered: 1 });
  });

  it("recovery hands back each thread's PENDING messages in the order they were journaled, however threads interleave", async () => {
    const place = backend.place();
    const s = await place.open();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat(3), fc.boolean()), { minLength: 1, maxLength: 30 }), async (steps) => {
        const journaled: Message[] = [];
        for (const [thread, dispatch] of steps) {
          const m = msg({ threadId: `fifo-${thread}` });
          journaled.push(m);
          await s.journal.pending([m]);
          if (dispatch) void s.journal.dispatched(m); // interrupted mid-handler
        }
        const { messages } = await s.journal.recover(newId(), 100);
        for (let t = 0; t < 4; t++) {
          const ids = journaled.filter((m) => m.threadId === `fifo-${t}`).map((m) => m.id);
          const recovered = messages.filter((m) => m.threadId === `fifo-${t}`).map((m) => m.id);
          expect(recovered.slice(-ids.length)).toEqual(ids);
        }
        for (const m of journaled) await s.journal.acked(m, [], []);
      }),
      { numRuns: 15 },
    );
  });

  it('redelivers FAILED entries only (409 otherwise, 404 when unknown)', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    await expect(s.journal.redeliver(m.id)).rejects.toThrow(Errors.JOURNAL_NOT_REDELIVERABLE(m.id, 'PENDING').detail);
    await s.journal.failed(m, 'handler_error', 'boom', [], []);
    const again = await s.journal.redeliver(m.id);
    expect(again.attempt).toBe(2);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'PENDING', error: null, failureReason: null, failedAt: null });
    expect((await s.journal.keptStats()).counts).toEqual({ PENDING: 1, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 0 });
    await expect(s.journal.redeliver('nope')).rejects.toThrow('Journal entry not found: nope');
  });

  it('keeps every earlier attempt of an entry sent again (redelivered after a failure, or recovered after a crash), with its times and outcome', async () => {
    const place = backend.place();
    const s = await place.open();
    const m = msg();
    await s.journal.pending([m]);
    await s.journal.dispatched(m);
    await s.journal.failed(m, 'handler_error', 'boom', [], []);
    const first = (await s.journal.get(m.id))!;
    expect(first.earlierAttempts).toEqual([]);
    const again = await s.journal.redeliver(m.id);
    const requeued = (await s.journal.get(m.id))!;
    // The entry's own fields describe the attempt to come: not dispatched yet.
    expect(requeued).toMatchObject({ state: 'PENDING', dispatchedAt: null, failedAt: null, error: null });
    expect(requeued.earlierAttempts).toEqual([
      { attempt: 1, dispatchedAt: first.dispatchedAt, endedAt: first.failedAt, outcome: 'failed', failureReason: 'handler_error', error: 'boom', requeuedAt: expect.any(Number) },
    ]);
    expect(requeued.earlierAttempts[0]!.requeuedAt).toBeGreaterThanOrEqual(first.failedAt!);
    await s.journal.dispatched(again);
    const second = (await s.journal.get(m.id))!;
    expect(second).toMatchObject({ state: 'DISPATCHED', attempts: 2 });
    expect(second.dispatchedAt).toBeGreaterThanOrEqual(requeued.earlierAttempts[0]!.requeuedAt);
    await s.close(); // dies mid-handler: recovery takes attempt 2 back

    const t = await place.open();
    const { messages } = await t.journal.recover('boot-2', 5);
    expect(messages.map((x) => [x.id, x.attempt])).toEqual([[m.id, 3]]);
    const recovered = (await t.journal.get(m.id))!;
    expect(recovered.earlierAttempts.map((a) => [a.attempt, a.outcome, a.failureReason])).toEqual([
      [1, 'failed', 'handler_error'],
      [2, 'interrupted', null],
    ]);
    expect(recovered.earlierAttempts[1]).toMatchObject({ dispatchedAt: second.dispatchedAt, error: null });
    expect(recovered.dispatchedAt).toBeNull();
    await t.journal.dispatched(messages[0]!);
    await t.journal.acked(messages[0]!, [], []);
    expect(await t.journal.get(m.id)).toMatchObject({ state: 'ACKED', attempts: 3, earlierAttempts: recovered.earlierAttempts });
  });

  it('prunes ACKED entries after retain_days and FAILED after failed_retain_days, with their recorded calls, leaving the rest', async () => {
    const s = await backend.place().open();
    const acked = msg();
    const failed = msg();
    const pending = msg();
    await s.journal.pending([acked, failed, pending]);
    const ackedCall = call(acked.id);
    const pendingCall = call(pending.id);
    s.llmCalls.recordCall(ackedCall);
    s.llmCalls.recordTool(tool(ackedCall));
    s.llmCalls.recordCall(pendingCall);
    await s.journal.acked(acked, [], []);
    await s.journal.failed(failed, 'timeout', 't', [], []);
    expect((await s.llmCalls.forMessage(acked.id)).calls).toHaveLength(1);
    expect(await s.journal.prune(Date.now() + 6 * DAY)).toBe(0);
    expect(await s.journal.prune(Date.now() + 8 * DAY)).toBe(1);
    expect(await s.journal.get(acked.id)).toBeNull();
    expect(await s.llmCalls.forMessage(acked.id)).toEqual({ calls: [], tools: [], total: 0 });
    expect(await s.journal.get(failed.id)).not.toBeNull();
    expect(await s.journal.prune(Date.now() + 31 * DAY)).toBe(1);
    expect(await s.journal.get(pending.id)).not.toBeNull();
    expect((await s.llmCalls.forMessage(pending.id)).calls).toEqual([pendingCall]);
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(1);
    expect((await s.journal.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(1);
  });

  it('prunes in batches until nothing is due', async () => {
    const s = await backend.place().open({ retainDays: 1 });
    const many = Array.from({ length: 2_300 }, () => msg({ from: 'api', to: 'b' }));
    await s.journal.pending(many);
    for (const m of many) void s.journal.acked(m, [], []);
    expect(await s.journal.prune(Date.now() + 2 * DAY)).toBe(2_300);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 0, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 0 });
    expect((await s.journal.list({ agent: 'b', limit: 1, offset: 0 })).total).toBe(0);
  });

  it('lists with filters, totals and paging, newest first', async () => {
    const s = await backend.place().open();
    const ms = [msg({ threadId: 'x' }), msg({ threadId: 'y', from: 'a', to: 'b' }), msg({ threadId: 'x', to: 'b' })];
    await s.journal.pending(ms);
    const byThread = await s.journal.list({ threadId: 'x', limit: 1, offset: 0 });
    expect(byThread.total).toBe(2);
    expect(byThread.items[0]!.message.id).toBe(ms[2]!.id);
    expect((await s.journal.list({ threadId: 'x', limit: 1, offset: 0, order: 'oldest' })).items[0]!.message.id).toBe(ms[0]!.id);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ agent: 'b', limit: 1, offset: 1 })).items.map((e) => e.message.id)).toEqual([ms[1]!.id]);
    expect((await s.journal.list({ state: 'ACKED', limit: 10, offset: 0 })).total).toBe(0);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 3, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 0 });
  });

  it('filters by creation time (startTime inclusive, endTime exclusive) with the other filters', async () => {
    const s = await backend.place().open();
    const a = msg({ to: 'b' });
    await s.journal.pending([a]);
    const aAt = (await s.journal.get(a.id))!.createdAt;
    while (Date.now() <= aAt) await new Promise((r) => setImmediate(r)); // the next entries are created a millisecond later at least
    const [b, c] = [msg({ to: 'b' }), msg({ threadId: 'other' })];
    await s.journal.pending([b, c]);
    const bAt = (await s.journal.get(b.id))!.createdAt;
    const ids = async (q: Partial<JournalQuery>) => {
      const page = await s.journal.list({ limit: 10, offset: 0, ...q });
      return { ids: page.items.map((e) => e.message.id), total: page.total };
    };
    expect(await ids({ startTime: bAt })).toEqual({ ids: [c.id, b.id], total: 2 });
    expect(await ids({ endTime: bAt })).toEqual({ ids: [a.id], total: 1 });
    expect(await ids({ startTime: aAt, endTime: bAt + 1, agent: 'b' })).toEqual({ ids: [b.id, a.id], total: 2 });
    expect(await ids({ startTime: bAt, agent: 'b', limit: 1 })).toEqual({ ids: [b.id], total: 1 });
    expect(await ids({ startTime: bAt, threadId: 't1', state: 'PENDING' })).toEqual({ ids: [b.id], total: 1 });
    expect(await ids({ startTime: bAt + 1_000_000 })).toEqual({ ids: [], total: 0 });
  });

  it('text search: payload (field names and values) or error, case-insensitive, LIKE characters literal, reading the newest `window` entries', async () => {
    const s = await backend.place().open();
    const a = msg({ payload: { text: 'Tide pools, 50%_off' } });
    const b = msg({ payload: { text: 'say "hi" \\ now' }, to: 'b' });
    const c = msg({ payload: { note: 'nothing' } });
    await s.journal.pending([a, b, c]);
    await s.journal.failed(c, 'handler_error', 'Provider TIMEOUT after 30 s', [], []);
    const find = async (text: string, window = 100, q: Partial<JournalQuery> = {}) => {
      const page = await s.journal.list({ limit: 10, offset: 0, text: { text, window }, ...q });
      return { ids: page.items.map((e) => e.message.id), total: page.total, truncated: page.searchTruncated };
    };
    expect(await find('TIDE')).toEqual({ ids: [a.id], total: 1, truncated: false });
    expect(await find('50%_')).toEqual({ ids: [a.id], total: 1, truncated: false });
    expect(await find('%')).toEqual({ ids: [a.id], total: 1, truncated: false });
    expect(await find('_')).toEqual({ ids: [a.id], total: 1, truncated: false });
    expect(await find('say "hi"')).toEqual({ ids: [b.id], total: 1, truncated: false });
    expect(await find('\\ now')).toEqual({ ids: [b.id], total: 1, truncated: false });
    expect(await find('timeout')).toEqual({ ids: [c.id], total: 1, truncated: false });
    expect(await find('text')).toEqual({ ids: [b.id, a.id], total: 2, truncated: false });
    expect(await find('text', 100, { agent: 'b' })).toEqual({ ids: [b.id], total: 1, truncated: false });
    expect(await find('text', 100, { limit: 1, offset: 1 })).toEqual({ ids: [a.id], total: 2, truncated: false });
    expect(await find('o', 100, { state: 'FAILED' })).toEqual({ ids: [c.id], total: 1, truncated: false });
    expect(await find("'; DROP TABLE journal; --")).toEqual({ ids: [], total: 0, truncated: false });
    // The window: the newest 2 entries are b and c; a (the oldest) is not read, and the answer says so.
    expect(await find('tide', 2)).toEqual({ ids: [], total: 0, truncated: true });
    expect(await find('text', 2)).toEqual({ ids: [b.id], total: 1, truncated: true });
    expect(await find('tide', 3)).toEqual({ ids: [a.id], total: 1, truncated: false });
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 2, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 1 });
  });

  it('thread history: the messages of a thread that involve an agent, oldest first, the last `limit`', async () => {
    const s = await backend.place().open();
    const ms = [msg({ to: 'a' }), msg({ from: 'a', to: 'b' }), msg({ from: 'b', to: 'c' }), msg({ from: 'c', to: 'a' }), msg({ threadId: 'other', to: 'a' })];
    await s.journal.pending(ms);
    expect((await s.journal.threadHistory('t1', 'a', 10)).map((m) => m.id)).toEqual([ms[0]!.id, ms[1]!.id, ms[3]!.id]);
    expect((await s.journal.threadHistory('t1', 'a', 2)).map((m) => m.id)).toEqual([ms[1]!.id, ms[3]!.id]);
  });

  it("kept stats: the oldest PENDING entry's age, null when none", async () => {
    const s = await backend.place().open();
    expect((await s.journal.keptStats()).oldestPendingAgeMs).toBeNull();
    const m = msg();
    await s.journal.pending([m]);
    const kept = await s.journal.keptStats();
    expect(kept.oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
    expect(kept.counts.PENDING).toBe(1);
    await s.journal.dispatched(m);
    expect((await s.journal.keptStats()).oldestPendingAgeMs).toBeNull();
  });

  it('a database from a newer organism (higher schema version) is refused, not misread', async () => {
    const place = backend.place();
    await (await place.open()).close();
    await place.setSchemaVersion(place.schemaVersion + 1);
    await expect(place.open()).rejects.toThrow(`database schema version ${place.schemaVersion + 1} is newer than this organism (${place.schemaVersion})`);
  });

  it('one organism process per store: a second open while the first holds it is refused with a clear message', async () => {
    const place = backend.place();
    const s = await place.open();
    await expect(place.open({ lockWaitMs: 0 })).rejects.toThrow(/is in use by another organism process/);
    await s.close();
    await (await place.open({ lockWaitMs: 0 })).close(); // free again once closed
  });

  it('opening an up-to-date database again migrates nothing and keeps every row', async () => {
    const place = backend.place();
    const s = await place.open();
    await s.journal.pending([msg()]);
    await s.close();
    const t = await place.open();
    expect((await t.journal.list({ limit: 10, offset: 0 })).total).toBe(1);
  });
});
