import { describe, expect, it } from 'vitest';
import type { Handler } from '../../src/core/handler.js';
import { Errors } from '../../src/errors/catalogue.js';
import { createHandlerContext, reply, runHandler, scripted, send } from '../../src/testing/index.js';

describe('createHandlerContext / runHandler', () => {
  const escalate: Handler = async (payload, ctx) => {
    const earlier = await ctx.history();
    ctx.log.info('escalating', { seen: earlier.length, attempt: ctx.attempt });
    if (payload['urgent']) return [send('oncall', { text: String(payload['text']) }), reply({ text: 'escalated' })];
    return send('archive', { text: String(payload['text']) });
  };

  it('records what the handler logged and sent; messages to a listener that is no declared peer are denied', async () => {
    const run = await runHandler(
      escalate,
      { text: 'disk full', urgent: true },
      { self: 'desk', from: 'triage', peers: ['oncall'], history: [{ from: 'api', to: 'triage', payload: { text: 'x' } }], attempt: 2 },
    );
    expect(run.sent).toEqual([{ to: 'oncall', payload: { text: 'disk full' } }, { payload: { text: 'escalated' } }]);
    expect(run.denied).toEqual([]);
    expect(run.ctx.logs).toEqual([expect.objectContaining({ level: 'info', msg: 'escalating', seen: 1, attempt: 2, listener: 'desk' })]);
    const quiet = await runHandler(escalate, { text: 'old' }, { peers: ['oncall'] });
    expect(quiet.denied).toEqual([{ to: 'archive', payload: { text: 'old' } }]);
    expect(quiet.sent).toEqual([]);
  });

  it('fills the history and the context from the options', async () => {
    const ctx = createHandlerContext({
      self: 'desk',
      from: 'triage',
      payloadType: 'Ticket',
      threadId: 't-1',
      metadata: { orgId: 'o' },
      history: [
        { from: 'api', to: 'desk', payload: { a: 1 } },
        { from: 'desk', to: 'api', payload: { b: 2 } },
      ],
    });
    expect([ctx.self, ctx.from, ctx.payloadType, ctx.threadId, ctx.metadata, ctx.attempt]).toEqual(['desk', 'triage', 'Ticket', 't-1', { orgId: 'o' }, 1]);
    const history = await ctx.history(1);
    expect(history).toEqual([expect.objectContaining({ threadId: 't-1', from: 'desk', to: 'api', payload: { b: 2 }, hops: 1 })]);
  });

  it('gives the handler a signal the test aborts', async () => {
    const waits: Handler = (_payload, ctx) =>
      new Promise((_, reject) => {
        ctx.signal.addEventListener('abort', () => reject(new Error(`stopped: ${String(ctx.signal.reason)}`)));
      });
    const ctx = createHandlerContext();
    const running = runHandler(waits, {}, { ctx });
    ctx.abort('thread killed');
    await expect(running).rejects.toThrow('stopped: thread killed');
  });

  it('answers ctx.llm from a scripted model and records the calls; without one, a call fails naming the option', async () => {
    const summarize: Handler = async (payload, ctx) => {
      const answer = await ctx.llm.complete({ system: 'Summarize.', messages: [{ role: 'user', content: String(payload['text']) }] });
      return reply({ summary: answer.content });
    };
    const llm = scripted({ summarizer: (req) => `summary of ${req.lastMessage?.content}` });
    const run = await runHandler(summarize, { text: 'a long text' }, { self: 'summarizer', llm });
    expect(run.sent).toEqual([{ payload: { summary: 'summary of a long text' } }]);
    expect(run.ctx.llmCalls.map((c) => [c.content, c.provider, c.model])).toEqual([['summary of a long text', 'scripted', 'test-model']]);
    await expect(runHandler(summarize, { text: 'x' }, { self: 'summarizer' })).rejects.toThrow(Errors.TEST_HANDLER_NO_LLM('summarizer').message);
  });
});
