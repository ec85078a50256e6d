import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { send } from '../../src/core/handler.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { MemoryJournal, MemoryThreadStore, MemoryUsageStore } from '../../src/store/index.js';
import { deferred, eventually, listener, loaded, settled, startOrganism } from './harness.js';

describe('pause and resume', () => {
  it('holds messages while paused (nothing dropped) and releases them in order on resume', async () => {
    const got: string[] = [];
    const { organism } = await startOrganism([listener('worker', { handler: (p) => void got.push(String(p['text'])) })]);
    organism.pauseListener('worker');
    expect(organism.agent('worker').state).toBe('paused');
    const thread = 'T-pause';
    for (let i = 0; i < 20; i++) await organism.inject('worker', { text: `m${i}` }, { threadId: thread });
    await new Promise((r) => setTimeout(r, 50));
    expect(got).toEqual([]);
    expect(organism.agent('worker').queueDepth).toBe(20);
    organism.resumeListener('worker');
    expect(organism.agent('worker').state).toBe('idle');
    await eventually(() => got.length === 20);
    expect(got).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(organism.agent('worker').queueDepth).toBe(0);
    await organism.stop();
  });

  it('lets in-flight work finish when paused', async () => {
    const gate = deferred();
    const done: string[] = [];
    const { organism } = await startOrganism([listener('w', { handler: async (p) => (await gate.promise, void done.push(String(p['text']))) })]);
    await organism.inject('w', { text: 'first' });
    await eventually(() => organism.agent('w').state === 'processing');
    organism.pauseListener('w');
    gate.resolve();
    await eventually(() => done.length === 1);
    expect(organism.agent('w').state).toBe('paused');
    await organism.stop();
  });

  it('pause of an unknown agent is an error with the spec text', async () => {
    const { organism } = await startOrganism([listener('w')]);
    expect(() => organism.pauseListener('nope')).toThrow('Agent not found: nope');
    await organism.stop();
  });
});

describe('kill', () => {
  it('aborts in-flight handlers, fails queued messages as killed and refuses later ones', async () => {
    let aborted = false;
    const started = deferred();
    const { organism, events } = await startOrganism(
      [
        listener('slow', {
          handler: (_p, ctx) =>
            new Promise((_, reject) => {
              started.resolve();
              ctx.signal.addEventListener('abort', () => {
                aborted = true;
                reject(new Error('aborted'));
              });
            }),
        }),
      ],
      { maxConcurrentPerAgent: 1 },
    );
    const { threadId } = await organism.inject('slow', { text: '1' });
    await organism.inject('slow', { text: '2' }, { threadId });
    await started.promise;
    const record = await organism.killThread(threadId);
    expect(record.status).toBe('killed');
    await eventually(() => aborted);
    const killedFailures = await eventually(() => {
      const n = events.filter((e) => e.type === 'journal_failed' && e.reason === 'killed').length;
      return n === 2 ? n : 0;
    });
    expect(killedFailures).toBe(2);
    await expect(organism.inject('slow', { text: '3' }, { threadId })).rejects.toThrow(Errors.THREAD_KILLED(threadId).detail);
    expect((await organism.thread(threadId))?.status).toBe('killed');
    await organism.stop();
  });

  it('an inject being journaled when its thread is killed is refused, its message FAILED killed (not left PENDING), the thread stays killed', async () => {
    const journal = new MemoryJournal();
    const pending = journal.pending.bind(journal);
    let hold: Promise<void> | null = null;
    const holding = deferred();
    journal.pending = (messages) => {
      if (!hold) return pending(messages);
      holding.resolve();
      return hold.then(() => pending(messages)); // a slow commit of this one
    };
    const { organism } = await startOrganism(
      [listener('slow', { handler: (_p, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))) })],
      {},
      { storage: { journal, threads: new MemoryThreadStore(), usage: new MemoryUsageStore(), close() {} } },
    );
    const { threadId } = await organism.inject('slow', { text: '1' });
    const release = deferred();
    hold = release.promise;
    const late = organism.inject('slow', { text: '2' }, { threadId });
    late.catch(() => undefined);
    await holding.promise;
    await organism.killThread(threadId);
    release.resolve();
    await expect(late).rejects.toThrow(Errors.THREAD_KILLED(threadId).detail);
    const entries = await eventually(
      async () => {
        const page = await journal.list({ threadId, limit: 10, offset: 0, order: 'oldest' });
        return page.items.every((e) => e.state === 'FAILED') ? page.items : null;
      },
      5_000,
      'every entry of the thread to end FAILED',
    );
    expect(entries.map((e) => [e.message.payload, e.state, e.failureReason])).toEqual([
      [{ text: '1' }, 'FAILED', 'killed'],
      [{ text: '2' }, 'FAILED', 'killed'],
    ]);
    expect((await organism.thread(threadId))?.status).toBe('killed');
    await organism.stop();
  });

  it('kill of an unknown thread is 404 with the spec text', async () => {
    const { organism } = await startOrganism([listener('w')]);
    await expect(organism.killThread('nope')).rejects.toThrow('Thread not found: nope');
    await organism.stop();
  });
});

describe('faults', () => {
  it('a handler timeout ends the delivery with a SystemError to the sender', async () => {
    const { organism, events } = await startOrganism([
      listener('a', { peers: ['slow'], handler: (p, ctx) => (ctx.from === 'api' ? send('slow', p) : undefined) }),
      listener('slow', { timeoutSeconds: 0.05, handler: () => new Promise(() => {}) }),
    ]);
    const { threadId } = await organism.inject('a', { text: 'x' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    const failure = events.find((e) => e.type === 'journal_failed' && e.reason === 'timeout');
    expect(failure?.type === 'journal_failed' && failure.error).toBe(Errors.HANDLER_TIMEOUT('slow', 50).detail);
    expect(events.some((e) => e.type === 'message' && e.message.to === 'a' && e.message.payloadType === SYSTEM_ERROR_TYPE)).toBe(true);
    await organism.stop();
  });

  it('a crashing handler fails its delivery, the pump carries on', async () => {
    let okCalls = 0;
    const { organism, events } = await startOrganism([
      listener('crash', {
        handler: () => {
          throw new Error('boom');
        },
      }),
      listener('fine', { handler: () => void okCalls++ }),
    ]);
    const crashed = await organism.inject('crash', { text: 'x' });
    const t = await settled(organism, crashed.threadId);
    expect(t.status).toBe('error');
    expect(t.error).toBe(Errors.HANDLER_FAILED('crash', 'boom').detail);
    expect(organism.agent('crash').state).toBe('error');
    const ok = await organism.inject('fine', { text: 'y' });
    expect((await settled(organism, ok.threadId)).status).toBe('completed');
    expect(okCalls).toBe(1);
    expect(events.some((e) => e.type === 'journal_failed' && e.reason === 'handler_error')).toBe(true);
    await organism.stop();
  });

  it('an invalid result (not a message) fails the delivery', async () => {
    const { organism, events } = await startOrganism([listener('bad', { handler: () => 42 as never })]);
    const { threadId } = await organism.inject('bad', { text: 'x' });
    await settled(organism, threadId);
    const failure = events.find((e) => e.type === 'journal_failed' && e.reason === 'invalid_result');
    expect(failure?.type === 'journal_failed' && failure.error).toContain('bad returned an invalid result');
    await organism.stop();
  });
});

describe('concurrency and ordering', () => {
  it('respects the global and per-agent limits', async () => {
    let current = 0;
    let peak = 0;
    const perAgent = new Map<string, number>();
    const perAgentPeak = new Map<string, number>();
    const work = (name: string) => async () => {
      current++;
      peak = Math.max(peak, current);
      perAgent.set(name, (perAgent.get(name) ?? 0) + 1);
      perAgentPeak.set(name, Math.max(perAgentPeak.get(name) ?? 0, perAgent.get(name)!));
      await new Promise((r) => setTimeout(r, 5));
      perAgent.set(name, perAgent.get(name)! - 1);
      current--;
    };
    const { organism } = await startOrganism([listener('a', { handler: work('a') }), listener('b', { handler: work('b') })], { maxConcurrentHandlers: 3, maxConcurrentPerAgent: 2 });
    const threads = [];
    for (let i = 0; i < 30; i++) threads.push((await organism.inject(i % 2 ? 'a' : 'b', { text: `${i}` })).threadId);
    for (const t of threads) await settled(organism, t);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
    expect(perAgentPeak.get('a')).toBeLessThanOrEqual(2);
    expect(perAgentPeak.get('b')).toBeLessThanOrEqual(2);
    await organism.stop();
  });

  it('a handler that returned frees its slot while its ack is still being written; stop waits for the write', async () => {
    const journal = new MemoryJournal();
    const gate = deferred();
    const acked = journal.acked.bind(journal);
    let heldAcks = 0;
    journal.acked = async (...args) => {
      heldAcks++;
      await gate.promise; // a slow commit
      return acked(...args);
    };
    const started: string[] = [];
    const { organism } = await startOrganism(
      [listener('a', { handler: (p) => void started.push((p as { text: string }).text) })],
      { maxConcurrentHandlers: 1, maxConcurrentPerAgent: 1 },
      { storage: { journal, threads: new MemoryThreadStore(), usage: new MemoryUsageStore(), close() {} } },
    );
    await organism.inject('a', { text: 'first' });
    await organism.inject('a', { text: 'second' });
    // With one slot, the second handler runs although the first ack has not been written.
    await eventually(() => started.length === 2 && heldAcks === 2, 5_000, 'both handlers to run');
    const stopping = organism.stop({ timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 50));
    expect(organism.status).toBe('stopping'); // in flight until the acks are written
    gate.resolve();
    const report = await stopping;
    expect(report).toMatchObject({ drained: true, abortedInFlight: 0 });
    expect((await journal.stats()).counts.ACKED).toBe(2);
  });

  it('a backlog of handlers that return at once is worked off over several event-loop turns, not in one blocking run', async () => {
    let done = 0;
    const { organism } = await startOrganism([listener('a', { handler: () => void done++ })], { maxConcurrentHandlers: 10, maxConcurrentPerAgent: 10 });
    organism.pauseListener('a');
    for (let i = 0; i < 2_000; i++) await organism.inject('a', { text: `${i}` });
    organism.resumeListener('a');
    const t0 = performance.now();
    const seenByNextTurn = await new Promise<number>((resolve) => setImmediate(() => resolve(done)));
    // One turn starts deliveries for a few milliseconds (TURN_BUDGET_MS), then lets I/O and timers run.
    expect(seenByNextTurn).toBeGreaterThan(0);
    expect(seenByNextTurn).toBeLessThan(2_000);
    expect(performance.now() - t0).toBeLessThan(1_000);
    await eventually(() => done === 2_000, 10_000, 'the backlog to be worked off');
    await organism.stop();
  });

  it('is FIFO within a thread even when the agent may run several deliveries at once', async () => {
    const order: number[] = [];
    const { organism } = await startOrganism([
      listener('w', {
        handler: async (p) => {
          const n = Number(p['text']);
          await new Promise((r) => setTimeout(r, (10 - (n % 10)) * 2)); // later messages finish faster
          order.push(n);
        },
      }),
    ]);
    for (let i = 0; i < 20; i++) await organism.inject('w', { text: String(i) }, { threadId: 'fifo' });
    await eventually(() => order.length === 20);
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await organism.stop();
  });

  it('a full queue refuses injections with "organism busy", or lets them wait for room', async () => {
    const gate = deferred();
    const { organism } = await startOrganism([listener('w', { handler: () => gate.promise })], {
      maxQueue: 3,
      maxConcurrentHandlers: 1,
      maxConcurrentPerAgent: 1,
    });
    await organism.inject('w', { text: 'in flight' });
    await eventually(() => organism.agent('w').state === 'processing');
    for (let i = 0; i < 3; i++) await organism.inject('w', { text: `q${i}` });
    await expect(organism.inject('w', { text: 'overflow' })).rejects.toThrow(Errors.ORGANISM_BUSY(3).detail);
    const waiting = organism.inject('w', { text: 'patient' }, { waitMs: 10_000 });
    gate.resolve();
    await expect(waiting).resolves.toMatchObject({ threadId: expect.any(String) });
    await organism.stop();
  });

  it('handler outputs are never refused by the queue bound (no deadlock when full)', async () => {
    let delivered = 0;
    const { organism } = await startOrganism(
      [listener('fan', { peers: ['sink'], handler: () => Array.from({ length: 10 }, (_, i) => send('sink', { text: `${i}` })) }), listener('sink', { handler: () => void delivered++ })],
      { maxQueue: 2 },
    );
    const { threadId } = await organism.inject('fan', { text: 'go' });
    await settled(organism, threadId);
    expect(delivered).toBe(10);
    await organism.stop();
  });
});

describe('stop', () => {
  it('refuses new messages, drains in-flight work and reaches stopped', async () => {
    const gate = deferred();
    let finished = false;
    const statuses: string[] = [];
    const { organism, events } = await startOrganism([listener('w', { handler: async () => (await gate.promise, void (finished = true)) })]);
    await organism.inject('w', { text: 'x' });
    await eventually(() => organism.agent('w').state === 'processing');
    const stopping = organism.stop({ timeoutMs: 10_000 });
    expect(organism.status).toBe('stopping');
    await expect(organism.inject('w', { text: 'late' })).rejects.toThrow(Errors.ORGANISM_NOT_ACCEPTING('stopping').detail);
    setTimeout(() => gate.resolve(), 20);
    const report = await stopping;
    expect(finished).toBe(true);
    expect(report).toMatchObject({ drained: true, abortedInFlight: 0 });
    expect(organism.status).toBe('stopped');
    for (const e of events) if (e.type === 'organism_status') statuses.push(e.status);
    expect(statuses).toEqual(['running', 'stopping', 'stopped']);
  });

  it('aborts what is still running when the drain timeout passes', async () => {
    let sawAbort = false;
    const { organism } = await startOrganism([
      listener('w', {
        handler: (_p, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => ((sawAbort = true), resolve()))),
      }),
    ]);
    await organism.inject('w', { text: 'x' });
    await eventually(() => organism.agent('w').state === 'processing');
    const report = await organism.stop({ timeoutMs: 50 });
    expect(report).toMatchObject({ drained: false, abortedInFlight: 1 });
    expect(sawAbort).toBe(true);
    expect(organism.status).toBe('stopped');
  });
});

describe('reload', () => {
  it('adds, removes and updates listeners, never removes system listeners, keeps queues', async () => {
    const calls: string[] = [];
    const a = listener('a', { handler: () => void calls.push('a1') });
    const { organism, events } = await startOrganism([a, listener('b'), listener('system.audit')]);
    const next = loaded([{ ...listener('a', { handler: () => void calls.push('a2') }), handlerVersion: 'v2:a' }, listener('c')]);
    const diff = { success: true, added: ['c'], removed: ['b'], updated: ['a'], updatedFields: { a: ['handler code'] }, changed: [], restartRequired: [], error: null };
    expect(organism.planReload(next)).toEqual(diff);
    const result = organism.reload(next);
    expect(result).toEqual(diff);
    expect(
      organism
        .agents()
        .map((x) => x.name)
        .sort(),
    ).toEqual(['a', 'c', 'system.audit']);
    expect(events.some((e) => e.type === 'reload')).toBe(true);
    const { threadId } = await organism.inject('a', { text: 'x' });
    await settled(organism, threadId);
    expect(calls).toEqual(['a2']);
    await organism.stop();
  });
});
