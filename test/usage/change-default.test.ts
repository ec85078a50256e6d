import { describe, expect, it } from 'vitest';
import { BudgetManager } from '../../src/usage/budgets.js';

const usage = (promptTokens: number, completionTokens: number) => ({ promptTokens, completionTokens });

describe('BudgetManager.changeDefault (a reload of max_tokens_per_thread)', () => {
  it('live budgets at the previous default take the new one, spend kept and thresholds re-armed; others keep theirs', () => {
    const b = new BudgetManager({ defaultMaxTokens: 100 });
    const warned: Array<[string, number]> = [];
    b.onThreshold((e) => warned.push([e.threadId, e.threshold]));
    b.settle(b.reserve('running', 80), usage(60, 20), 'a');
    b.settle(b.reserve('own', 10), usage(10, 0), 'a');
    b.setCeiling('own', 150);
    b.settle(b.reserve('done', 10), usage(10, 0), 'a');
    b.finish('done');
    expect(warned).toEqual([['running', 75]]);

    expect(b.changeDefault(200)).toBe(1);
    expect(b.get('running')).toMatchObject({ maxTokens: 200, promptTokens: 60, completionTokens: 20, active: true });
    expect(b.get('own')!.maxTokens).toBe(150);
    expect(b.get('done')!.maxTokens).toBe(100);
    expect(b.headroom('new')).toBe(200);
    // 80 of 200 is below 75 %: the warning fires again when crossed again.
    b.settle(b.reserve('running', 80), usage(80, 0), 'a');
    expect(warned).toEqual([
      ['running', 75],
      ['running', 75],
    ]);

    // Lowered below the spend: refused from now on, spend untouched.
    expect(b.changeDefault(50)).toBe(1);
    expect(b.get('running')).toMatchObject({ maxTokens: 50, totalTokens: 160, isExhausted: true });
    expect(() => b.reserve('running', 1)).toThrow(/Token budget exhausted/);
    expect(b.changeDefault(50)).toBe(0);
  });
});
