import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { LlmRouter } from '../../src/llm/router.js';
import type { CompletionRequest, LlmProvider } from '../../src/llm/types.js';
import { BudgetManager, localBudgetLedger } from '../../src/usage/budgets.js';
import type { BudgetLedger } from '../../src/core/budget.js';
import { Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import { call, rejection, request } from './helpers.js';

/**
 * A shared ledger answers later: another process may reserve between this call's headroom
 * read and its reservation. Simulated here by a ledger that lets "another process" take
 * tokens right after the first headroom read.
 */
function racedLedger(ceiling: number, takenByOther: number): BudgetLedger & { inner: BudgetManager } {
  const inner = new BudgetManager({ defaultMaxTokens: ceiling });
  let raced = false;
  return Object.assign(localBudgetLedger(inner), {
    inner,
    async headroom(threadId: string) {
      const h = inner.headroom(threadId);
      if (!raced) {
        raced = true;
        inner.reserve(threadId, takenByOther);
      }
      return h;
    },
    reserve: async (threadId: string, tokens: number) => inner.reserve(threadId, tokens),
  });
}

function routerOver(budgets: BudgetLedger): { router: LlmRouter; asked: CompletionRequest[] } {
  const asked: CompletionRequest[] = [];
  const provider: LlmProvider = {
    name: 'p',
    type: 'openai',
    priority: 0,
    maxRetries: 0,
    serves: () => true,
    complete: async (req) => {
      asked.push(req);
      return { content: 'ok', model: req.model, usage: { promptTokens: 4, completionTokens: 10, totalTokens: 14, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null } };
    },
  };
  return { router: new LlmRouter({ providers: [provider], pricing: new Pricing({}), tracker: new UsageTracker(), budgets }), asked };
}

describe('router on a ledger shared with other processes', () => {
  it('a reservation refused because another process took tokens meanwhile is sized again on what is left', async () => {
    // Ceiling 80; prompt estimate 4; 50 output asked. Another process takes 40 after the first read.
    const budgets = racedLedger(80, 40);
    const { router, asked } = routerOver(budgets);
    await router.complete(request('m'), call());
    expect(asked.map((r) => r.maxOutputTokens)).toEqual([36]);
    expect(budgets.inner.get('t1')).toMatchObject({ totalTokens: 14, reservedTokens: 40 });
  });

  it('still refuses when not even a useful answer fits, and an unchanged size is refused as it was', async () => {
    const { router, asked } = routerOver(racedLedger(80, 70));
    expect(Errors.BUDGET_EXHAUSTED.is(await rejection(router.complete(request('m'), call())))).toBe(true);
    const plain = routerOver(localBudgetLedger(new BudgetManager({ defaultMaxTokens: 15 })));
    const err = await rejection(plain.router.complete(request('m'), call()));
    expect(Errors.BUDGET_EXHAUSTED.is(err)).toBe(true);
    expect(asked).toHaveLength(0);
    expect(plain.asked).toHaveLength(0);
  });
});
