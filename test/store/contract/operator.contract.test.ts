import { expect, it } from 'vitest';
import type { LlmCallRecord, ToolCallRecord } from '../../../src/llm/call-record.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

function call(threadId: string, messageId: string | null, startedAt: number): LlmCallRecord {
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
    startedAt,
    latencyMs: 3,
    request: { messages: [{ role: 'user', content: 'hi' }] },
    tools: ['search'],
    response: { text: 'hello', toolCalls: [], finishReason: 'stop' },
    usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 } as LlmCallRecord['usage'],
    cost: 0.1,
    error: null,
    maxOutputTokens: 64,
    overOutputCap: true,
  };
}

function tool(of: LlmCallRecord, startedAt = of.startedAt + 1): ToolCallRecord {
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
    startedAt,
    durationMs: 1,
  };
}

eachBackend('operator state and budgets contract', (backend) => {
  it('paused agents outlive the process; a resume is remembered too', async () => {
    const place = backend.place();
    const s = await place.open();
    expect(s.operator.pausedAgents()).toEqual([]);
    await s.operator.setPaused('writer', true);
    await s.operator.setPaused('critic', true);
    await s.operator.setPaused('writer', true); // twice: still once
    expect([...s.operator.pausedAgents()].sort()).toEqual(['critic', 'writer']);
    await s.close();

    const t = await place.open();
    expect([...t.operator.pausedAgents()].sort()).toEqual(['critic', 'writer']);
    await t.operator.setPaused('writer', false);
    await t.close();
    const u = await place.open();
    expect(u.operator.pausedAgents()).toEqual(['critic']);
  });

  it('budgets: the saved snapshots replace the previous ones and survive a reopen', async () => {
    const place = backend.place();
    const s = await place.open();
    expect(await s.budgets.load()).toEqual([]);
    await s.budgets.save([
      { threadId: 't1', maxTokens: 10, promptTokens: 1, completionTokens: 2, fired: [] },
      { threadId: 't2', maxTokens: 20 },
    ]);
    await s.budgets.save([{ threadId: 't2', maxTokens: 30, fired: [0.8] }]);
    await s.close();
    const t = await place.open();
    expect(await t.budgets.load()).toEqual([{ threadId: 't2', maxTokens: 30, fired: [0.8] }]);
    await t.budgets.save([]);
    expect(await t.budgets.load()).toEqual([]);
  });

  it("LLM and tool calls: a delivery's all, a thread's paged oldest first with the tools of the page, a re-recorded call replaced", async () => {
    const s = await backend.place().open();
    const calls = [call('t1', 'm1', 1_000), call('t1', 'm2', 3_000), call('t1', 'm1', 2_000), call('t2', 'm3', 1_500)];
    for (const c of calls) s.llmCalls.recordCall(c);
    const tools = [tool(calls[0]!), tool(calls[1]!), tool(calls[2]!, 2_500)];
    for (const t of tools) s.llmCalls.recordTool(t);
    const m1 = await s.llmCalls.forMessage('m1');
    expect(m1).toEqual({ calls: [calls[0], calls[2]], tools: [tools[0], tools[2]], total: 2 });
    const page = await s.llmCalls.forThread('t1', { limit: 2, offset: 0 });
    expect(page).toEqual({ calls: [calls[0], calls[2]], tools: [tools[0], tools[2]], total: 3 });
    expect(await s.llmCalls.forThread('t1', { limit: 2, offset: 2 })).toEqual({ calls: [calls[1]], tools: [tools[1]], total: 3 });
    const again = { ...calls[0]!, error: 'retried', response: null };
    s.llmCalls.recordCall(again);
    expect((await s.llmCalls.forMessage('m1')).calls[0]).toEqual(again);
    expect(await s.llmCalls.forMessage('none')).toEqual({ calls: [], tools: [], total: 0 });
  });
});
