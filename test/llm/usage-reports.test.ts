import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { CallRecorder, type LlmCallRecord } from '../../src/llm/call-record.js';
import { LlmRouter } from '../../src/llm/router.js';
import { createProvider } from '../../src/llm/providers/index.js';
import { OutputCapWatch } from '../../src/llm/usage-check.js';
import { BudgetManager, localBudgetLedger } from '../../src/usage/budgets.js';
import { Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { OrganismMetrics } from '../../src/telemetry/metrics.js';
import { listener, settled, startOrganism } from '../pump/harness.js';
import { call, providerConfig, rejection, request, track } from './helpers.js';
import { anthropicOk, startAnthropicServer } from './servers/anthropic-server.js';
import { openAiOk, startOpenAiServer } from './servers/openai-server.js';
import type { ScriptedReply } from './servers/scripted-server.js';

type Format = 'openai' | 'anthropic';
type Mode = 'streamed' | 'whole';

/** A server of `format` answering `usage` (merged into its usual usage) as `mode` says. */
async function serverWith(format: Format, mode: Mode, usage: Record<string, unknown>) {
  if (format === 'openai') {
    return track(startOpenAiServer({ streams: mode === 'streamed', replies: [{ body: openAiOk('hi', usage) }] }));
  }
  const reply: ScriptedReply = mode === 'streamed' ? { body: anthropicOk('hi', usage) } : { rawBody: JSON.stringify(anthropicOk('hi', usage)) };
  return track(startAnthropicServer({ replies: [reply] }));
}

/** A router over one provider, recording calls and usage events, logging to `lines`. */
function routerFor(format: Format, url: string) {
  const calls: LlmCallRecord[] = [];
  const events: UsageEvent[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const tracker = new UsageTracker();
  tracker.subscribe((e) => events.push(e));
  const budgets = new BudgetManager({ defaultMaxTokens: 100_000_000 });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const router = new LlmRouter({
    providers: [createProvider(providerConfig({ name: `p-${format}`, type: format, baseUrl: url, maxRetries: 2 }))],
    pricing: new Pricing({}),
    tracker,
    budgets: localBudgetLedger(budgets),
    sleep: async () => {},
    recorder: new CallRecorder({ recordCall: (r) => void calls.push(r), recordTool: () => {} }, 'metadata'),
    outputCap: new OutputCapWatch(pino({ level: 'info' }, sink)),
  });
  return { router, calls, events, lines, budgets };
}

const usageKeys: Record<Format, { output: string; input: string }> = {
  openai: { output: 'completion_tokens', input: 'prompt_tokens' },
  anthropic: { output: 'output_tokens', input: 'input_tokens' },
};

describe('provider-reported usage', () => {
  for (const format of ['openai', 'anthropic'] as const) {
    for (const mode of ['streamed', 'whole'] as const) {
      const { input, output } = usageKeys[format];
      for (const [what, usage] of [
        ['a negative count', { [output]: -5_100 }],
        ['a fractional count', { [input]: 12.5 }],
        ['a count as a string', { [output]: '20' }],
      ] as const) {
        it(`${format}, ${mode}: ${what} is a bad response: not retried, nothing billed`, async () => {
          const s = await serverWith(format, mode, usage);
          const t = routerFor(format, s.url);
          const err = await rejection(t.router.complete(request('m', { maxOutputTokens: 50 }), call()));
          expect(Errors.LLM_REQUEST_FAILED.is(err)).toBe(true);
          expect(err.message).toContain('unreadable response: usage');
          expect(err.message).toContain('token counts are non-negative integers');
          expect(s.seen).toHaveLength(1);
          expect(t.events).toEqual([]);
          expect(t.budgets.get('t1')?.totalTokens ?? 0).toBe(0);
          expect(t.budgets.get('t1')?.reservedTokens ?? 0).toBe(0);
        });
      }

      it(`${format}, ${mode}: completion tokens over the output cap are billed as reported, flagged on the call record and logged once per provider`, async () => {
        const s = await serverWith(format, mode, { [output]: 51_000_000 });
        const t = routerFor(format, s.url);
        const first = await t.router.complete(request('m', { maxOutputTokens: 50 }), call());
        const second = await t.router.complete(request('m', { maxOutputTokens: 50 }), call());
        for (const r of [first, second]) {
          expect(r.usage.completionTokens).toBe(51_000_000);
          expect(r.overOutputCap).toBe(true);
        }
        expect(t.events.map((e) => e.completionTokens)).toEqual([51_000_000, 51_000_000]);
        expect(t.calls.map((c) => [c.maxOutputTokens, c.overOutputCap])).toEqual([
          [50, true],
          [50, true],
        ]);
        const warned = t.lines.filter((l) => String(l['msg']).includes('more completion tokens than the call allowed'));
        expect(warned).toHaveLength(1);
        expect(warned[0]).toMatchObject({ provider: `p-${format}`, maxOutputTokens: 50, completionTokens: 51_000_000 });
      });
    }
  }

  it('a call within its cap is not flagged', async () => {
    const s = await serverWith('openai', 'streamed', { completion_tokens: 50 });
    const t = routerFor('openai', s.url);
    expect((await t.router.complete(request('m', { maxOutputTokens: 50 }), call())).overOutputCap).toBe(false);
    expect(t.calls[0]).toMatchObject({ maxOutputTokens: 50, overOutputCap: false });
  });

  it('an organism counts calls over the output cap in organism_llm_output_over_cap_total and shows the flag on the recorded call', async () => {
    const s = await serverWith('openai', 'streamed', { completion_tokens: 51_000_000 });
    const { organism } = await startOrganism([listener('boss', { handler: null, agent: true, prompt: 'p', model: 'gpt-x', maxOutputTokens: 64 })], {
      llm: { providers: [providerConfig({ name: 'compat', type: 'openai', baseUrl: s.url })], pricing: {} },
    });
    const metrics = new OrganismMetrics(organism);
    try {
      const { threadId, messageId } = await organism.inject('boss', { text: 'hi' });
      await settled(organism, threadId);
      const { calls } = await organism.llmCalls.forMessage(messageId);
      expect(calls[0]).toMatchObject({ maxOutputTokens: 64, overOutputCap: true, usage: expect.objectContaining({ completionTokens: 51_000_000 }) });
      const family = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'organism_llm_output_over_cap_total');
      expect(family?.values).toEqual([{ labels: { provider: 'compat' }, value: 1 }]);
    } finally {
      metrics.detach();
      await organism.stop({ timeoutMs: 2_000 });
    }
  });
});
