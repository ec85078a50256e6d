import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { BudgetManager, type BudgetThresholdEvent } from '../../src/usage/budgets.js';
import { Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import { event, usage } from './fixtures.js';

describe('pricing', () => {
  it('matches the longest prefix', () => {
    const p = new Pricing();
    expect(p.priceFor('gpt-4o-mini-2024-07-18')).toMatchObject({ prompt: 0.15, completion: 0.6 });
    expect(p.priceFor('gpt-4o-2024-08-06')).toMatchObject({ prompt: 2.5, completion: 10 });
    expect(p.cost('claude-opus-4-1', usage(1_000_000, 1_000_000))).toBeCloseTo(90, 9);
  });

  it('lets organism.yaml override and extend the table', () => {
    const p = new Pricing({ 'gpt-4o': { prompt: 1, completion: 2, cacheRead: null, cacheWrite: null }, local: { prompt: 0, completion: 0, cacheRead: null, cacheWrite: null } });
    expect(p.cost('gpt-4o', usage(1_000_000, 0))).toBe(1);
    expect(p.cost('gpt-4o-mini', usage(1_000_000, 0))).toBeCloseTo(0.15, 9);
    expect(p.cost('local-llama', usage(5000, 5000))).toBe(0);
  });

  it('gives null, never 0, for a model without a price', () => {
    expect(new Pricing().cost('mystery', usage(100, 100))).toBeNull();
  });

  it('bills cache reads and writes at their own prices when set', () => {
    const p = new Pricing({ m: { prompt: 10, completion: 0, cacheRead: 1, cacheWrite: 20 } });
    expect(p.cost('m', usage(1_000_000, 0, 500_000, 100_000))).toBeCloseTo(4 + 0.5 + 2, 9);
  });
});

describe('usage tracker', () => {
  it('aggregates totals, per agent and per model, with zeros for unknown ids', () => {
    const t = new UsageTracker();
    t.record(event({ agentId: 'a', model: 'm1', threadId: 't1', totalLatencyMs: 10 }));
    t.record(event({ agentId: 'b', model: 'm1', threadId: 't1', totalLatencyMs: 30, cost: null }));
    expect(t.totals()).toMatchObject({ requestCount: 2, totalTokens: 30, totalCost: 0.001, unpricedRequests: 1, avgLatencyMs: 20 });
    expect(t.agent('a')).toMatchObject({ agentId: 'a', requestCount: 1, totalTokens: 15 });
    expect(t.model('m1')).toMatchObject({ requestCount: 2 });
    expect(t.agent('nobody')).toEqual({ agentId: 'nobody', totalTokens: 0, promptTokens: 0, completionTokens: 0, requestCount: 0, totalCost: 0, unpricedRequests: 0 });
    expect(t.byAgent().map((a) => a.agentId)).toEqual(['a', 'b']);
  });

  it('reset clears aggregates and keeps subscribers receiving', () => {
    const t = new UsageTracker();
    const seen: string[] = [];
    t.subscribe((e) => seen.push(e.id));
    t.record(event({ id: '1' }));
    t.reset();
    expect(t.totals().requestCount).toBe(0);
    t.record(event({ id: '2' }));
    expect(seen).toEqual(['1', '2']);
    expect(t.totals().requestCount).toBe(1);
  });

  it('a throwing subscriber breaks neither recording nor other subscribers', () => {
    const errors: unknown[] = [];
    const t = new UsageTracker((e) => errors.push(e));
    const seen: string[] = [];
    t.subscribe(() => {
      throw new Error('bad subscriber');
    });
    t.subscribe((e) => seen.push(e.id));
    t.record(event({ id: 'x' }));
    expect(seen).toEqual(['x']);
    expect(errors).toHaveLength(1);
    expect(t.totals().requestCount).toBe(1);
  });
});

describe('thread budgets', () => {
  it('looking up or checking never creates a budget; the first reservation does', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    expect(b.get('t')).toBeNull();
    expect(b.has('t')).toBe(false);
    expect(b.count()).toBe(0);
    b.reserve('t', 10);
    expect(b.has('t')).toBe(true);
    expect(b.get('t')).toMatchObject({ maxTokens: 1000, reservedTokens: 10, totalTokens: 0 });
  });

  it('refuses a reservation that could exceed the ceiling, counting reservations in flight', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    b.reserve('t', 600);
    expect(() => b.reserve('t', 500)).toThrow(Errors.BUDGET_EXHAUSTED('t', 0, 1000, 500).detail);
    const r = b.reserve('t', 400);
    b.cancel(r);
    expect(b.get('t')?.reservedTokens).toBe(600);
  });

  it('delivers 75/90/95 % thresholds once each, in order, even when one call jumps over several', () => {
    const b = new BudgetManager({ defaultMaxTokens: 1000 });
    const fired: BudgetThresholdEvent[] = [];
    b.onThreshold((e) => fired.push(e));
    b.settle(b.reserve('t', 10), { promptTokens: 700, completionTokens: 0 }, 'a');
    expect(fired).toEqual([]);
    const r = b.settle(b.reserve('t', 10), { promptTokens: 230, completionTokens: 0 }, 'a');
    expect(r.map((e) => e.threshold)).toEqual([75, 90]);
    b.settle(b.reserve('t', 10), { promptTokens: 1, completionTokens: 0 }, 'a');
    b.settle(b.reserve('t', 10), { promptTokens: 30, completionTokens: 0 }, 'a');
    expect(fired.map((e) => `${e.threshold}:${e.severity}`)).toEqual(['75:warning', '90:critical', '95:final']);
    expect(fired[2]).toMatchObject({ agent: 'a', tokensUsed: 961, tokensRemaining: 39, maxTokens: 1000, percentUsed: 96.1 });
  });

  it('exhaustion, then raising the ceiling lets the thread go on (thresholds re-arm below)', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    b.settle(b.reserve('t', 50), { promptTokens: 100, completionTokens: 0 }, 'a');
    expect(b.get('t')).toMatchObject({ isExhausted: true, remaining: 0, percentUsed: 100 });
    expect(() => b.reserve('t', 1)).toThrow(/exhausted/);
    expect(b.setCeiling('t', 1000)).toMatchObject({ maxTokens: 1000, remaining: 900, isExhausted: false, percentUsed: 10 });
    const fired = b.settle(b.reserve('t', 10), { promptTokens: 700, completionTokens: 0 }, 'a');
    expect(fired.map((e) => e.threshold)).toEqual([75]);
  });

  it('setCeiling on a thread without a budget is the spec 404', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    expect(() => b.setCeiling('nope', 10)).toThrow('No budget found for thread: nope');
  });

  it('lists by percent used, highest first; percentUsed has one decimal; a finished budget leaves the live list', () => {
    const b = new BudgetManager({ defaultMaxTokens: 3000 });
    b.settle(b.reserve('low', 1), { promptTokens: 1, completionTokens: 0 }, 'a');
    b.settle(b.reserve('high', 1), { promptTokens: 1000, completionTokens: 0 }, 'a');
    expect(b.list().items.map((x) => [x.threadId, x.percentUsed])).toEqual([
      ['high', 33.3],
      ['low', 0],
    ]);
    b.finish('high');
    expect(b.list().items.map((x) => x.threadId)).toEqual(['low']);
    expect(b.list({ state: 'finished', limit: 10, offset: 0 }).items.map((x) => x.threadId)).toEqual(['high']);
  });

  it('snapshot and restore keep usage and fired thresholds', () => {
    const a = new BudgetManager({ defaultMaxTokens: 100 });
    a.settle(a.reserve('t', 1), { promptTokens: 80, completionTokens: 0 }, 'x');
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    b.restore(a.snapshot());
    expect(b.get('t')).toMatchObject({ totalTokens: 80 });
    expect(b.settle(b.reserve('t', 1), { promptTokens: 11, completionTokens: 0 }, 'x').map((e) => e.threshold)).toEqual([90]);
  });

  it('property: totals equal settled usage and no threshold ever fires twice', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ kind: fc.constantFrom('settle', 'cancel'), reserve: fc.integer({ min: 1, max: 300 }), used: fc.integer({ min: 0, max: 300 }) }), { maxLength: 40 }),
        (ops) => {
          const b = new BudgetManager({ defaultMaxTokens: 5000 });
          const fired: number[] = [];
          b.onThreshold((e) => fired.push(e.threshold));
          let settled = 0;
          for (const op of ops) {
            let r;
            try {
              r = b.reserve('t', op.reserve);
            } catch {
              continue;
            }
            if (op.kind === 'cancel') b.cancel(r);
            else {
              b.settle(r, { promptTokens: op.used, completionTokens: 0 }, 'a');
              settled += op.used;
            }
          }
          const info = b.get('t');
          if (info) {
            expect(info.totalTokens).toBe(settled);
            expect(info.reservedTokens).toBe(0);
          }
          expect(new Set(fired).size).toBe(fired.length);
        },
      ),
    );
  });
});
