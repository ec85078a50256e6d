import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Errors, type OrganismError } from '../../src/errors/catalogue.js';
import * as publicApi from '../../src/index.js';
import { MemoryBudgetArchive } from '../../src/usage/budget-archive.js';
import { BudgetManager, type BudgetThresholdEvent, type Reservation, type ThreadBudgetSnapshot } from '../../src/usage/budgets.js';
import { DEFAULT_PRICING, Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import { event, usage } from './fixtures.js';

describe('pricing, further', () => {
  it('carries the reference default table', () => {
    expect(Object.keys(DEFAULT_PRICING).sort()).toEqual(['claude-opus-4', 'claude-sonnet-3-5', 'claude-sonnet-4', 'gpt-4o', 'gpt-4o-mini', 'grok-3', 'grok-4.1', 'o1', 'o3-mini'].sort());
    expect(new Pricing().priceFor('o3-mini-high')).toMatchObject({ prompt: 1.1, completion: 4.4 });
    expect(new Pricing().priceFor('o1-preview')).toMatchObject({ prompt: 15, completion: 60 });
  });

  it('an override of a short prefix does not shadow a longer default prefix', () => {
    const p = new Pricing({ gpt: { prompt: 100, completion: 100, cacheRead: null, cacheWrite: null } });
    expect(p.priceFor('gpt-4o-mini')).toMatchObject({ prompt: 0.15 });
    expect(p.priceFor('gpt-3.5-turbo')).toMatchObject({ prompt: 100 });
  });

  it('a longer override wins over a shorter default for its models only', () => {
    const p = new Pricing({ 'gpt-4o-2024': { prompt: 1, completion: 1, cacheRead: null, cacheWrite: null } });
    expect(p.priceFor('gpt-4o-2024-08-06')).toMatchObject({ prompt: 1 });
    expect(p.priceFor('gpt-4o')).toMatchObject({ prompt: 2.5 });
  });

  it('bills cache tokens at the prompt price when the model has no cache prices', () => {
    const p = new Pricing();
    const plain = p.cost('gpt-4o', usage(1_000_000, 0));
    expect(p.cost('gpt-4o', usage(1_000_000, 0, 600_000, 200_000))).toBeCloseTo(plain!, 12);
  });

  it('caps cache counts at the prompt tokens and prices completion separately', () => {
    const p = new Pricing({ m: { prompt: 10, completion: 40, cacheRead: 1, cacheWrite: 20 } });
    // All 1M prompt tokens were cache reads (a provider reporting more is capped).
    expect(p.cost('m', usage(1_000_000, 500_000, 2_000_000, null))).toBeCloseTo(1 + 20, 9);
  });

  it('an unpriced model is null, and the tracker counts it as unpriced, never as a zero cost', () => {
    const p = new Pricing();
    expect(p.priceFor('llama3')).toBeNull();
    const cost = p.cost('llama3', usage(1000, 1000));
    expect(cost).toBeNull();
    const t = new UsageTracker();
    t.record(event({ model: 'llama3', cost }));
    expect(t.totals()).toMatchObject({ totalCost: 0, unpricedRequests: 1, requestCount: 1 });
    expect(t.model('llama3')).toMatchObject({ unpricedRequests: 1, totalCost: 0 });
  });
});

describe('usage tracker, further', () => {
  it('starts at zeros, avgLatencyMs 0 when nothing was recorded', () => {
    const t = new UsageTracker();
    expect(t.totals()).toEqual({
      totalTokens: 0,
      promptTokens: 0,
      completionTokens: 0,
      requestCount: 0,
      totalCost: 0,
      avgLatencyMs: 0,
      unpricedRequests: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
    expect(t.byAgent()).toEqual([]);
    expect(t.byModel()).toEqual([]);
    expect(t.model('none')).toMatchObject({ model: 'none', requestCount: 0, totalTokens: 0 });
  });

  it('sums cache and reasoning tokens and averages total (not provider) latency', () => {
    const t = new UsageTracker();
    t.record(event({ cacheReadTokens: 3, reasoningTokens: 7, providerLatencyMs: 1, totalLatencyMs: 100 }));
    t.record(event({ cacheWriteTokens: 4, providerLatencyMs: 1, totalLatencyMs: 300 }));
    expect(t.totals()).toMatchObject({ cacheReadTokens: 3, cacheWriteTokens: 4, reasoningTokens: 7, avgLatencyMs: 200 });
  });

  it('keeps per-model aggregates apart', () => {
    const t = new UsageTracker();
    t.record(event({ model: 'm1', threadId: 't1', cost: 0.5 }));
    t.record(event({ model: 'm2', threadId: 't2', cost: 0.25, promptTokens: 100, completionTokens: 0, totalTokens: 100 }));
    t.record(event({ model: 'm2', threadId: 't1', cost: null }));
    expect(t.byModel()).toEqual([
      { model: 'm1', totalTokens: 15, promptTokens: 10, completionTokens: 5, requestCount: 1, totalCost: 0.5, unpricedRequests: 0 },
      { model: 'm2', totalTokens: 115, promptTokens: 110, completionTokens: 5, requestCount: 2, totalCost: 0.25, unpricedRequests: 1 },
    ]);
  });

  it('unsubscribe stops delivery; a subscriber sees the aggregates already updated', () => {
    const t = new UsageTracker();
    const counts: number[] = [];
    const off = t.subscribe(() => counts.push(t.totals().requestCount));
    t.record(event());
    off();
    t.record(event());
    expect(counts).toEqual([1]);
  });

  it('a throwing subscriber is isolated even without an error callback, and after reset', () => {
    const t = new UsageTracker();
    const seen: string[] = [];
    t.subscribe(() => {
      throw new Error('boom');
    });
    t.subscribe((e) => seen.push(e.id));
    t.reset();
    expect(() => t.record(event({ id: 'y' }))).not.toThrow();
    expect(seen).toEqual(['y']);
  });
});

describe('thread budgets, further', () => {
  it('a reservation exactly up to the ceiling is allowed; one token more is refused with the catalogue error', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    b.settle(b.reserve('t', 40), usage(40, 0), 'a');
    const err = (() => {
      try {
        b.reserve('t', 61);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(Errors.BUDGET_EXHAUSTED.is(err)).toBe(true);
    expect((err as Error).message).toBe('Token budget exhausted for thread t: 40 of 100 tokens used, this call needs up to 61');
    expect(b.reserve('t', 60).tokens).toBe(60);
    expect(b.get('t')).toMatchObject({ reservedTokens: 60, remaining: 60, isExhausted: false });
  });

  it('concurrent reservations count against each other until settled or cancelled', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    const r1 = b.reserve('t', 50);
    const r2 = b.reserve('t', 50);
    expect(() => b.reserve('t', 1)).toThrow(/exhausted/);
    b.settle(r1, usage(10, 5), 'a'); // releases 50, bills 15
    expect(b.headroom('t')).toBe(35);
    b.cancel(r2);
    expect(b.headroom('t')).toBe(85);
    expect(b.reserve('t', 85).tokens).toBe(85);
  });

  it('a thread that is not exhausted is refused only for a call that could overrun; headroom lets the caller fit it', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    b.settle(b.reserve('t', 900), usage(900, 0), 'a');
    expect(() => b.reserve('t', 500)).toThrow(/this call needs up to 500/);
    expect(b.get('t')?.isExhausted).toBe(false);
    expect(b.headroom('t')).toBe(100);
    expect(() => b.reserve('t', b.headroom('t'))).not.toThrow();
  });

  it('headroom never creates a budget and reports the default for unknown threads', () => {
    const b = new BudgetManager({ defaultMaxTokens: 700 });
    expect(b.headroom('x')).toBe(700);
    expect(b.has('x')).toBe(false);
    expect(b.list().items).toEqual([]);
  });

  it('a failed reservation still creates the budget (the thread did ask for LLM usage)', () => {
    const b = new BudgetManager({ defaultMaxTokens: 10 });
    expect(() => b.reserve('t', 11)).toThrow();
    expect(b.get('t')).toMatchObject({ totalTokens: 0, reservedTokens: 0, maxTokens: 10 });
  });

  it('refuses a negative or NaN reservation as a programming error', () => {
    const b = new BudgetManager({ defaultMaxTokens: 10 });
    expect(() => b.reserve('t', -5)).toThrow(RangeError);
    expect(() => b.reserve('t', Number.NaN)).toThrow(RangeError);
  });

  it('a reservation settles at most once: a repeated settle or a cancel after settle changes nothing', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    const r = b.reserve('t', 100);
    b.settle(r, usage(800, 0), 'a');
    expect(b.settle(r, usage(800, 0), 'a')).toEqual([]);
    b.cancel(r);
    expect(b.get('t')).toMatchObject({ totalTokens: 800, reservedTokens: 0 });
  });

  it('settling after the thread finished (a kill mid-call) still bills it, once; the budget is kept', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    const r = b.reserve('t', 10);
    b.finish('t');
    expect(b.count()).toBe(0);
    expect(b.settle(r, usage(9, 0), 'a')).toEqual([]);
    expect(b.settle(r, usage(9, 0), 'a')).toEqual([]); // once
    expect(b.get('t')).toMatchObject({ totalTokens: 9, reservedTokens: 0, active: false });
    // The thread's next call goes on from it; the old reservation cannot touch it.
    b.reserve('t', 1);
    b.cancel(r);
    expect(b.get('t')).toMatchObject({ totalTokens: 9, reservedTokens: 1, active: true });
  });

  it('a finished budget the archive refused (a full disk) stays in memory, not live, and is archived at the next save', () => {
    const archive = new MemoryBudgetArchive();
    let refuse = true;
    const failures: unknown[] = [];
    const put = archive.put.bind(archive);
    archive.put = (s, live) => {
      if (refuse) throw new Error('disk full');
      put(s, live);
    };
    const b = new BudgetManager({ defaultMaxTokens: 100, archive, onArchiveError: (err) => failures.push(err) });
    b.settle(b.reserve('t', 10), usage(7, 3), 'a');
    b.finish('t');
    expect(failures).toHaveLength(1);
    expect(b.count()).toBe(0);
    expect(b.get('t')).toMatchObject({ totalTokens: 10, active: false });
    expect(archive.get('t')).toBeNull();
    expect(b.snapshot()).toEqual([]); // not saved as live
    refuse = false;
    b.snapshot();
    expect(archive.get('t')).toMatchObject({ promptTokens: 7, completionTokens: 3 });
    expect(b.list({ state: 'finished', limit: 10, offset: 0 }).items.map((x) => x.threadId)).toEqual(['t']);
    // Its next call goes on from it.
    expect(b.headroom('t')).toBe(90);
  });

  it('fires 75, 90 and 95 together, in order, when one call jumps over all three; never again after', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    const heard: BudgetThresholdEvent[] = [];
    b.onThreshold((e) => heard.push(e));
    const fired = b.settle(b.reserve('t', 1000), usage(900, 99), 'writer');
    expect(fired.map((e) => [e.threshold, e.severity])).toEqual([
      [75, 'warning'],
      [90, 'critical'],
      [95, 'final'],
    ]);
    expect(heard).toEqual(fired);
    expect(fired[0]).toMatchObject({ threadId: 't', agent: 'writer', percentUsed: 99.9, tokensUsed: 999, tokensRemaining: 1, maxTokens: 1000 });
    expect(fired[0]!.message).toMatch(/99\.9%/);
    expect(b.settle(b.reserve('t', 1), usage(1, 0), 'writer')).toEqual([]);
    expect(heard).toHaveLength(3);
  });

  it('thresholds are per thread', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    expect(b.settle(b.reserve('a', 80), usage(80, 0), 'x').map((e) => e.threshold)).toEqual([75]);
    expect(b.settle(b.reserve('b', 80), usage(80, 0), 'x').map((e) => e.threshold)).toEqual([75]);
  });

  it('a throwing threshold listener breaks neither settle nor the other listeners; unsubscribe works', () => {
    const errors: unknown[] = [];
    const b = new BudgetManager({ defaultMaxTokens: 100, onListenerError: (e) => errors.push(e) });
    const heard: number[] = [];
    b.onThreshold(() => {
      throw new Error('bad listener');
    });
    const off = b.onThreshold((e) => heard.push(e.threshold));
    expect(b.settle(b.reserve('t', 80), usage(80, 0), 'a').map((e) => e.threshold)).toEqual([75]);
    expect(heard).toEqual([75]);
    expect(errors).toHaveLength(1);
    off();
    b.settle(b.reserve('t', 10), usage(10, 0), 'a');
    expect(heard).toEqual([75]);
    expect(b.get('t')?.totalTokens).toBe(90);
  });

  it('raising the ceiling re-arms only thresholds now below; lowering lets crossed ones fire at the next settle', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    b.settle(b.reserve('t', 96), usage(96, 0), 'a'); // 75, 90, 95 fired
    b.setCeiling('t', 120); // 80 %: 90 and 95 re-armed, 75 stays fired
    expect(b.settle(b.reserve('t', 14), usage(14, 0), 'a').map((e) => e.threshold)).toEqual([90]); // 91.7 %
    b.setCeiling('t', 115); // 95.7 %: 95 is crossed now and fires at the next settle
    expect(b.settle(b.reserve('t', 0), usage(0, 0), 'a').map((e) => e.threshold)).toEqual([95]);
  });

  it('lowering the ceiling to the usage exhausts the thread; below the usage (or 0) is refused with what to set instead', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    b.settle(b.reserve('t', 10), usage(300, 0), 'a');
    let err: unknown;
    try {
      b.setCeiling('t', 200);
    } catch (e) {
      err = e;
    }
    expect(Errors.BUDGET_BELOW_USAGE.is(err)).toBe(true);
    expect((err as OrganismError).status).toBe(422);
    expect((err as OrganismError).detail).toBe('Thread t has already used 300 tokens, more than a ceiling of 200: set maxTokens to at least 300, or kill the thread to stop it');
    expect(b.get('t')).toMatchObject({ maxTokens: 1000 }); // unchanged
    expect(() => b.setCeiling('t', 0)).toThrow(RangeError);
    expect(b.setCeiling('t', 300)).toMatchObject({ maxTokens: 300, remaining: 0, isExhausted: true, percentUsed: 100 });
    expect(() => b.reserve('t', 1)).toThrow(/exhausted/);
  });

  it('setCeiling with create sets the ceiling of a thread before its first LLM call', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    expect(b.setCeiling('early', 50, { create: true })).toMatchObject({ maxTokens: 50, totalTokens: 0, remaining: 50 });
    expect(() => b.reserve('early', 51)).toThrow(/exhausted/);
    b.settle(b.reserve('early', 50), usage(40, 10), 'a');
    expect(b.get('early')).toMatchObject({ maxTokens: 50, isExhausted: true });
  });

  it('remaining is never negative, even when a restored spend passed the ceiling', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    b.restore([{ threadId: 'over', maxTokens: 100, promptTokens: 90, completionTokens: 30, fired: [] }]);
    expect(b.get('over')).toMatchObject({ totalTokens: 120, remaining: 0, isExhausted: true });
  });

  it('setCeiling without a budget throws BUDGET_NOT_FOUND (404) and does not create one', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    let err: unknown;
    try {
      b.setCeiling('ghost', 500);
    } catch (e) {
      err = e;
    }
    expect(Errors.BUDGET_NOT_FOUND.is(err)).toBe(true);
    expect((err as { status: number }).status).toBe(404);
    expect(b.has('ghost')).toBe(false);
  });

  it('percentUsed rounds to one decimal and is 0 when the ceiling is 0 or less', () => {
    const b = new BudgetManager({ defaultMaxTokens: 3 });
    b.settle(b.reserve('third', 1), usage(1, 0), 'a');
    b.settle(b.reserve('two-thirds', 2), usage(2, 0), 'a');
    expect(b.get('third')?.percentUsed).toBe(33.3);
    expect(b.get('two-thirds')?.percentUsed).toBe(66.7);
    const z = new BudgetManager({ defaultMaxTokens: 0 });
    z.settle(z.reserve('t', 0), usage(0, 0), 'a');
    expect(z.get('t')).toMatchObject({ percentUsed: 0, remaining: 0, isExhausted: true });
  });

  it('list sorts highest percent first and count follows creations and finishes', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    for (const [id, n] of [
      ['a', 10],
      ['b', 90],
      ['c', 50],
    ] as const)
      b.settle(b.reserve(id, n), usage(n, 0), 'x');
    expect(b.list().items.map((x) => x.threadId)).toEqual(['b', 'c', 'a']);
    expect(b.count()).toBe(3);
    b.setCeiling('a', 11); // 90.9 %
    expect(b.list().items.map((x) => x.threadId)).toEqual(['a', 'b', 'c']);
    b.finish('b');
    b.finish('never-existed');
    expect(b.count()).toBe(2);
  });

  it('restore drops reservations, keeps ceilings, and skips malformed rows', () => {
    const a = new BudgetManager({ defaultMaxTokens: 100 });
    a.settle(a.reserve('t', 5), usage(20, 5), 'x');
    a.reserve('t', 30); // in flight when the process died
    a.setCeiling('t', 500);
    const snaps = a.snapshot();
    expect(snaps).toEqual([{ threadId: 't', maxTokens: 500, promptTokens: 20, completionTokens: 5, fired: [] }]);
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    const junk = [null, { threadId: 'bad', maxTokens: 'x' }, { threadId: 'bad2', maxTokens: 1, promptTokens: 0, completionTokens: 0 }] as unknown as ThreadBudgetSnapshot[];
    b.restore([...junk, ...snaps]);
    expect(b.list().items).toEqual([
      { threadId: 't', maxTokens: 500, promptTokens: 20, completionTokens: 5, totalTokens: 25, reservedTokens: 0, remaining: 475, percentUsed: 5, isExhausted: false, active: true },
    ]);
  });

  it('is reachable from the package entry point', () => {
    expect(publicApi.BudgetManager).toBe(BudgetManager);
    expect(publicApi.Pricing).toBe(Pricing);
    expect(publicApi.UsageTracker).toBe(UsageTracker);
    expect(publicApi.DEFAULT_PRICING).toBe(DEFAULT_PRICING);
  });
});

describe('budget properties', () => {
  type Op =
    | { kind: 'reserve'; thread: number; tokens: number }
    | { kind: 'settle'; pick: number; prompt: number; completion: number }
    | { kind: 'cancel'; pick: number }
    | { kind: 'ceiling'; thread: number; max: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('reserve' as const), thread: fc.nat(2), tokens: fc.nat(400) }),
    fc.record({ kind: fc.constant('settle' as const), pick: fc.nat(), prompt: fc.nat(300), completion: fc.nat(300) }),
    fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('ceiling' as const), thread: fc.nat(2), max: fc.integer({ min: 0, max: 3000 }) }),
  );

  it('for any interleaving of reserve/settle/cancel (and ceiling changes): totals equal settled usage, reserved equals what is open, no threshold fires twice without a re-arm, a refusal only when the call could overrun', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const b = new BudgetManager({ defaultMaxTokens: 1500 });
        const fired = new Map<string, number[]>();
        b.onThreshold((e) => fired.set(e.threadId, [...(fired.get(e.threadId) ?? []), e.threshold]));
        const open: Reservation[] = [];
        const settled = new Map<string, number>();
        const rearmed = new Set<string>();
        for (const o of ops) {
          const id = `t${'thread' in o ? o.thread : 0}`;
          if (o.kind === 'reserve') {
            const before = b.get(id);
            const available = before ? before.maxTokens - before.totalTokens - before.reservedTokens : 1500;
            try {
              open.push(b.reserve(id, o.tokens));
              expect(o.tokens).toBeLessThanOrEqual(available);
            } catch (err) {
              expect(Errors.BUDGET_EXHAUSTED.is(err)).toBe(true);
              expect(o.tokens).toBeGreaterThan(available);
            }
          } else if (o.kind === 'ceiling') {
            const before = b.get(id);
            // A ceiling is a positive integer no lower than what the thread already used.
            if (before && o.max >= 1 && o.max >= before.totalTokens) {
              b.setCeiling(id, o.max);
              rearmed.add(id);
            } else expect(() => b.setCeiling(id, o.max)).toThrow();
          } else if (open.length > 0) {
            const [r] = open.splice(o.pick % open.length, 1);
            if (o.kind === 'cancel') b.cancel(r!);
            else {
              const events = b.settle(r!, { promptTokens: o.prompt, completionTokens: o.completion }, 'a');
              expect(events.map((e) => e.threshold)).toEqual([...events.map((e) => e.threshold)].sort((x, y) => x - y));
              settled.set(r!.threadId, (settled.get(r!.threadId) ?? 0) + o.prompt + o.completion);
            }
          }
        }
        for (const info of b.list().items) {
          expect(info.totalTokens).toBe(settled.get(info.threadId) ?? 0);
          const held = open.filter((r) => r.threadId === info.threadId).reduce((n, r) => n + r.tokens, 0);
          expect(info.reservedTokens).toBe(held);
          const f = fired.get(info.threadId) ?? [];
          if (!rearmed.has(info.threadId)) expect(new Set(f).size).toBe(f.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
