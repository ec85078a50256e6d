import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Organism } from '../../src/organism/organism.js';
import { SYSTEM_ERROR_TYPE, SYSTEM_SENDER } from '../../src/core/message.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { retryDelayMs } from '../../src/pump/retry-policy.js';
import type { HandlerContext } from '../../src/core/handler.js';
import { deferred, eventually, listener, loaded, settled, startOrganism, Text } from './harness.js';
import { SYSTEM_ERROR_DEF } from '../../src/payload/builtin.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A handler that throws on its first `failures` tries, recording each try's attempt and start time. */
function flaky(failures: number) {
  const tries: Array<{ attempt: number; at: number }> = [];
  const handler = (_p: Record<string, unknown>, ctx: HandlerContext) => {
    tries.push({ attempt: ctx.attempt, at: Date.now() });
    if (tries.length <= failures) throw new Error(`try ${tries.length} broke`);
  };
  return { tries, handler };
}

describe('listener retry', () => {
  it('runs a handler that threw twice a third time after the backoff; the journal counts every try', async () => {
    const { tries, handler } = flaky(2);
    const retry = { maxAttempts: 3, backoff: 'exponential' as const, initialSeconds: 0.05, maxSeconds: 10 };
    const { organism } = await startOrganism([listener('worker', { handler, retry })]);
    const { threadId, messageId } = await organism.inject('worker', { text: 'x' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('completed');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2, 3]);
    // The waits follow the backoff: 50 ms after the first try failed, then 100 ms (lower bounds).
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(retryDelayMs(retry, 1));
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(retryDelayMs(retry, 2));
    const entry = (await organism.storage.journal.get(messageId))!;
    expect(entry).toMatchObject({ state: 'ACKED', attempts: 3, nextAttemptAt: null });
    expect(entry.earlierAttempts.map((a) => [a.attempt, a.outcome, a.failureReason])).toEqual([
      [1, 'failed', 'handler_error'],
      [2, 'failed', 'handler_error'],
    ]);
    expect(entry.earlierAttempts[0]!.error).toContain('try 1 broke');
    await organism.stop();
  });

  it('computes exponential and fixed backoff within max_seconds', () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs({ maxAttempts: 9, backoff: 'exponential', initialSeconds: 1, maxSeconds: 5 }, n))).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect([1, 2, 3].map((n) => retryDelayMs({ maxAttempts: 9, backoff: 'fixed', initialSeconds: 0.5, maxSeconds: 5 }, n))).toEqual([500, 500, 500]);
  });

  it('holds no handler slot while a retry waits: other threads are delivered meanwhile, the retry waits PENDING with its next try time', async () => {
    const seen: string[] = [];
    const handler = (p: Record<string, unknown>) => {
      seen.push(String(p['text']));
      if (p['text'] === 'flaky') throw new Error('not yet');
    };
    const { organism } = await startOrganism([listener('worker', { handler, retry: { maxAttempts: 2, backoff: 'fixed', initialSeconds: 60, maxSeconds: 60 } })], {
      maxConcurrentHandlers: 1,
      maxConcurrentPerAgent: 1,
    });
    const flakyMsg = await organism.inject('worker', { text: 'flaky' });
    const waiting = await eventually(async () => {
      const e = await organism.storage.journal.get(flakyMsg.messageId);
      return e?.state === 'PENDING' && e.attempts === 1 ? e : null;
    });
    // The backoff runs from when the retry was decided, a moment before the store stamps the
    // try's end (a millisecond apart on a busy machine): 60 s after the end, give or take that.
    expect(waiting.nextAttemptAt! - waiting.earlierAttempts[0]!.endedAt).toBeGreaterThan(60_000 - 100);
    expect(waiting.nextAttemptAt! - waiting.earlierAttempts[0]!.endedAt).toBeLessThanOrEqual(60_000);
    expect(waiting.message.attempt).toBe(2);
    const other = await organism.inject('worker', { text: 'other' });
    expect((await settled(organism, other.threadId)).status).toBe('completed');
    expect(seen).toEqual(['flaky', 'other']);
    expect((await organism.thread(flakyMsg.threadId))!.status).toBe('active');
    await organism.stop();
  });

  it('retries a handler timeout as well', async () => {
    const attempts: number[] = [];
    const handler = (_p: Record<string, unknown>, ctx: HandlerContext) => {
      attempts.push(ctx.attempt);
      // The first try never answers: its timeout fails it.
      return ctx.attempt === 1 ? new Promise<undefined>(() => {}) : undefined;
    };
    const { organism } = await startOrganism([listener('worker', { handler, timeoutSeconds: 0.05, retry: { maxAttempts: 2, backoff: 'fixed', initialSeconds: 0.01, maxSeconds: 1 } })]);
    const { threadId, messageId } = await organism.inject('worker', { text: 'x' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(attempts).toEqual([1, 2]);
    expect((await organism.storage.journal.get(messageId))!.earlierAttempts[0]!.failureReason).toBe('timeout');
    await organism.stop();
  });

  it('without retry: a thrown error fails the delivery at once, as before', async () => {
    const { tries, handler } = flaky(1);
    const { organism } = await startOrganism([listener('worker', { handler })]);
    const { threadId, messageId } = await organism.inject('worker', { text: 'x' });
    expect((await settled(organism, threadId)).status).toBe('error');
    expect(tries).toHaveLength(1);
    expect(await organism.storage.journal.get(messageId)).toMatchObject({ state: 'FAILED', attempts: 1, failureReason: 'handler_error' });
    await organism.stop();
  });
});

describe('on_error', () => {
  const SystemErrorTypes = ['Text', SYSTEM_ERROR_TYPE];

  it('routes the final SystemError to the named handler once retries are exhausted; the sender still gets its notice', async () => {
    const { tries, handler } = flaky(5);
    const routed: Array<{ payload: Record<string, unknown>; from: string; type: string }> = [];
    const senderSaw: string[] = [];
    const { organism } = await startOrganism(
      [
        listener('intake', {
          peers: ['worker'],
          handler: (p, ctx) => {
            senderSaw.push(ctx.payloadType);
            if (ctx.payloadType === 'Text') return { to: 'worker', payloadType: 'Text', payload: p };
          },
        }),
        listener('worker', { handler, peers: ['desk'], onError: 'desk', retry: { maxAttempts: 2, backoff: 'fixed', initialSeconds: 0.01, maxSeconds: 1 } }),
        listener('desk', { payloadTypes: SystemErrorTypes, handler: (p, ctx) => void routed.push({ payload: p, from: ctx.from, type: ctx.payloadType }) }),
      ],
      {},
      {},
      [Text, SYSTEM_ERROR_DEF],
    );
    const { threadId } = await organism.inject('intake', { text: 'x' });
    await eventually(() => routed.length === 1);
    const thread = await settled(organism, threadId);
    expect(tries).toHaveLength(2);
    expect(routed[0]).toMatchObject({ from: 'worker', type: SYSTEM_ERROR_TYPE, payload: { code: 'handler_error', to: 'worker', attempts: 2 } });
    expect(String(routed[0]!.payload['error'])).toContain('try 2 broke');
    // The sender's notice is recorded, never run: intake's handler saw only its own inject.
    expect(senderSaw).toEqual(['Text']);
    const notices = (await organism.storage.journal.list({ threadId, limit: 20, offset: 0 })).items.filter((e) => e.message.payloadType === SYSTEM_ERROR_TYPE);
    expect(notices.map((e) => [e.message.from, e.message.to, e.state]).sort()).toEqual([
      [SYSTEM_SENDER, 'intake', 'ACKED'],
      ['worker', 'desk', 'ACKED'],
    ]);
    expect(thread.status).toBe('error');
    await organism.stop();
  });

  it('an on_error handler that fails is not routed again: its failure ends there (no loop)', async () => {
    const deskRuns = deferred();
    let deskTries = 0;
    const { organism } = await startOrganism(
      [
        listener('worker', { peers: ['desk'], onError: 'desk', handler: () => Promise.reject(new Error('worker broke')) }),
        // desk routes its own failures to worker, which would loop if routing applied to them.
        listener('desk', {
          payloadTypes: SystemErrorTypes,
          peers: ['worker'],
          onError: 'worker',
          handler: () => {
            deskTries++;
            deskRuns.resolve();
            throw new Error('desk broke too');
          },
        }),
      ],
      {},
      {},
      [Text, SYSTEM_ERROR_DEF],
    );
    const { threadId } = await organism.inject('worker', { text: 'x' });
    await deskRuns.promise;
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(deskTries).toBe(1);
    const entries = (await organism.storage.journal.list({ threadId, limit: 20, offset: 0 })).items;
    const deskEntry = entries.find((e) => e.message.to === 'desk')!;
    expect(deskEntry).toMatchObject({ state: 'FAILED', failureReason: 'handler_error' });
    // Only the system notice to worker (never run) follows desk's failure: nothing routed back.
    expect(entries.filter((e) => e.message.to === 'worker' && e.message.from === 'desk')).toEqual([]);
    await organism.stop();
  });
});

describe('a retry across a restart', () => {
  it('waits out its backoff after the restart (neither run early nor lost) and runs once', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-retry-restart-'));
    dirs.push(dataDir);
    const retry = { maxAttempts: 3, backoff: 'fixed' as const, initialSeconds: 1, maxSeconds: 1 };
    const firstTries: number[] = [];
    const first = new Organism(
      loaded([
        listener('worker', {
          retry,
          handler: (_p, ctx) => {
            firstTries.push(ctx.attempt);
            throw new Error('down');
          },
        }),
      ]),
      { storage: openSqliteStorage({ dataDir }) },
    );
    await first.start();
    const { threadId, messageId } = await first.inject('worker', { text: 'x' });
    const waiting = await eventually(async () => {
      const e = await first.storage.journal.get(messageId);
      return e?.state === 'PENDING' && e.nextAttemptAt ? e : null;
    });
    await first.stop();
    expect(firstTries).toEqual([1]);

    const runs: Array<{ attempt: number; at: number }> = [];
    const second = new Organism(loaded([listener('worker', { retry, handler: (_p, ctx) => void runs.push({ attempt: ctx.attempt, at: Date.now() }) })]), {
      storage: openSqliteStorage({ dataDir }),
    });
    await second.start();
    try {
      expect((await settled(second, threadId)).status).toBe('completed');
      expect(runs).toHaveLength(1);
      expect(runs[0]!.attempt).toBe(2);
      expect(runs[0]!.at).toBeGreaterThanOrEqual(waiting.nextAttemptAt!);
      expect(await second.storage.journal.get(messageId)).toMatchObject({ state: 'ACKED', attempts: 2, nextAttemptAt: null });
    } finally {
      await second.stop();
    }
  });
});
