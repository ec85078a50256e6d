import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/core/message.js';
import type { Journal } from '../../../src/core/journal.js';
import type { UsageEvent } from '../../../src/usage/types.js';
import { MemoryJournal } from '../../../src/store/index.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

/** A listener's retry (issue 26): the journal side of it, on every store. */

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
    metadata: {},
    attempt: 1,
    ...over,
  };
}

function usage(messageId: string): UsageEvent {
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
    cost: null,
    metadata: {},
  };
}

/** What every journal does with a retried try, reopen aside. */
async function retriedTry(journal: Journal): Promise<{ m: Message; next: Message; notBefore: number }> {
  const m = msg();
  await journal.pending([m]);
  await journal.dispatched(m);
  // Read now: the memory journal hands out its live entry.
  const { dispatchedAt } = (await journal.get(m.id))!;
  const notBefore = Date.now() + 60_000;
  const next = await journal.retried(m, 'handler_error', 'boom', notBefore, []);
  expect(next).toMatchObject({ id: m.id, attempt: 2, notBefore });
  const entry = (await journal.get(m.id))!;
  expect(entry).toMatchObject({ state: 'PENDING', attempts: 1, dispatchedAt: null, failedAt: null, error: null, nextAttemptAt: notBefore });
  expect(entry.message.attempt).toBe(2);
  expect(entry.message.notBefore).toBeUndefined();
  expect(entry.earlierAttempts).toEqual([
    { attempt: 1, dispatchedAt, endedAt: expect.any(Number), outcome: 'failed', failureReason: 'handler_error', error: 'boom', requeuedAt: expect.any(Number) },
  ]);
  expect((await journal.keptStats()).counts).toMatchObject({ PENDING: 1, DISPATCHED: 0 });
  return { m, next, notBefore };
}

describe('retries (memory journal)', () => {
  it('puts a failed try back PENDING at the next attempt with its next try time, cleared when it is dispatched', async () => {
    const journal = new MemoryJournal();
    const { next } = await retriedTry(journal);
    await journal.dispatched(next);
    expect(await journal.get(next.id)).toMatchObject({ state: 'DISPATCHED', attempts: 2, nextAttemptAt: null });
    await journal.acked(next, [], []);
    expect(await journal.get(next.id)).toMatchObject({ state: 'ACKED', attempts: 2 });
  });
});

/** A waiting retry failed (a kill) then redelivered by an operator: its old wait is gone. */
async function killedThenRedelivered(journal: Journal): Promise<Message> {
  const { m, next } = await retriedTry(journal);
  await journal.failed(next, 'killed', 'Thread killed', [], []);
  expect(await journal.get(m.id)).toMatchObject({ state: 'FAILED', nextAttemptAt: null });
  const again = await journal.redeliver(m.id);
  expect(again.notBefore).toBeUndefined();
  expect(await journal.get(m.id)).toMatchObject({ state: 'PENDING', nextAttemptAt: null });
  return again;
}

describe('retries (memory journal): a retry failed while it waits', () => {
  it('shows no next try time once FAILED, nor after an operator redelivers it', async () => {
    await killedThenRedelivered(new MemoryJournal());
  });
});

eachBackend('retries', (backend) => {
  it('shows no next try time for a waiting retry once it FAILED (a kill), nor after an operator redelivers it, nor in recovery', async () => {
    const place = backend.place();
    const s = await place.open();
    const again = await killedThenRedelivered(s.journal);
    await s.close();
    const t = await place.open();
    const { messages } = await t.journal.recover('boot-2', 3);
    expect(messages.map((m) => [m.id, m.notBefore])).toEqual([[again.id, undefined]]);
  });

  it('puts a failed try back PENDING at the next attempt with its next try time and the usage it caused, in one write', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    await s.journal.dispatched(m);
    const spent = usage(m.id);
    await s.journal.retried(m, 'timeout', 'slow', Date.now() + 1_000, [spent]);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'PENDING', attempts: 1, nextAttemptAt: expect.any(Number) });
    await s.usage.flush();
    expect((await s.usage.history({ threadId: 't1', limit: 10, offset: 0 })).items.map((u) => u.id)).toEqual([spent.id]);
  });

  it('keeps a waiting retry across a restart: recovery hands it back with its next try time (not run early, not lost); its dispatch clears it', async () => {
    const place = backend.place();
    const s = await place.open();
    const { m, notBefore } = await retriedTry(s.journal);
    const other = msg({ threadId: 't2' });
    await s.journal.pending([other]);
    await s.close();

    const t = await place.open();
    const { messages, report } = await t.journal.recover('boot-2', 3);
    expect(report).toMatchObject({ redelivered: 0, failedMaxAttempts: 0 });
    expect(messages.map((x) => [x.id, x.attempt, x.notBefore])).toEqual([
      [m.id, 2, notBefore],
      [other.id, 1, undefined],
    ]);
    await t.journal.dispatched(messages[0]!);
    expect(await t.journal.get(m.id)).toMatchObject({ state: 'DISPATCHED', attempts: 2, nextAttemptAt: null });
    await t.journal.acked(messages[0]!, [], []);
    const done = (await t.journal.get(m.id))!;
    expect(done).toMatchObject({ state: 'ACKED', attempts: 2, nextAttemptAt: null });
    expect(done.earlierAttempts.map((a) => [a.attempt, a.outcome, a.failureReason])).toEqual([[1, 'failed', 'handler_error']]);
  });

  it('retries a try whose DISPATCHED mark was never written (the entry still PENDING)', async () => {
    const s = await backend.place().open();
    const m = msg();
    await s.journal.pending([m]);
    const next = await s.journal.retried(m, 'handler_error', 'boom', Date.now() + 1_000, []);
    expect(next.attempt).toBe(2);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'PENDING', attempts: 0, nextAttemptAt: expect.any(Number) });
    expect((await s.journal.keptStats()).counts).toMatchObject({ PENDING: 1, DISPATCHED: 0 });
  });

  it("recovers an interrupted delivery under its listener's retry.max_attempts, which replaces journal.max_attempts for it", async () => {
    const place = backend.place();
    const s = await place.open();
    const toA = msg({ to: 'a' });
    const toB = msg({ to: 'b', threadId: 't2' });
    await s.journal.pending([toA, toB]);
    await s.journal.dispatched(toA);
    await s.journal.dispatched(toB);
    await s.close(); // both die mid-handler at attempt 1

    const t = await place.open();
    const { messages, report } = await t.journal.recover('boot-2', { default: 1, byListener: { a: 4 } });
    expect(report).toMatchObject({ redelivered: 1, failedMaxAttempts: 1 });
    expect(messages.map((m) => [m.to, m.attempt])).toEqual([['a', 2]]);
    expect(await t.journal.get(toB.id)).toMatchObject({ state: 'FAILED', failureReason: 'max_attempts', error: 'Gave up after 1 interrupted attempt(s) (journal.max_attempts = 1)' });
    await t.journal.dispatched(messages[0]!);
    await t.close();

    const u = await place.open();
    await u.journal.recover('boot-3', { default: 1, byListener: { a: 2 } });
    expect(await u.journal.get(toA.id)).toMatchObject({
      state: 'FAILED',
      failureReason: 'max_attempts',
      error: 'Gave up after 2 interrupted attempt(s) (listeners.a.retry.max_attempts = 2)',
    });
  });
});
