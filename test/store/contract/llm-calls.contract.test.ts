import { expect, it } from 'vitest';
import type { LlmCallRecord, ToolCallRecord } from '../../../src/llm/call-record.js';
import { PG_LLM_CALLS_AGENT_MIGRATION, PG_MIGRATIONS } from '../../../src/store/postgres/migrations.js';
import { LLM_CALLS_AGENT_MIGRATION, MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

/** One provider attempt of `agent`; `failed` makes it what a provider that is down leaves. */
function attempt(agent: string, threadId: string, messageId: string, startedAt: number, n = 1, failed: string | null = null): LlmCallRecord {
  return {
    id: newId(),
    threadId,
    messageId,
    agent,
    provider: 'p',
    model: 'm',
    responseModel: failed ? null : 'm',
    attempt: n,
    repair: false,
    startedAt,
    latencyMs: 2,
    request: { messages: [{ role: 'user', content: `question ${startedAt}` }] },
    tools: ['facts_lookup'],
    response: failed ? null : { text: 'ok', toolCalls: [{ id: 'c1', name: 'facts_lookup', arguments: '{"topic":"x"}' }], finishReason: 'tool_calls' },
    usage: failed ? null : ({ promptTokens: 3, completionTokens: 2, totalTokens: 5, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null } as LlmCallRecord['usage']),
    cost: failed ? null : 0.01,
    error: failed,
    maxOutputTokens: 64,
    overOutputCap: false,
    record: 'full',
  };
}

function toolOf(of: LlmCallRecord): ToolCallRecord {
  return {
    id: newId(),
    llmCallId: of.id,
    threadId: of.threadId,
    messageId: of.messageId,
    agent: of.agent,
    server: 'facts',
    tool: 'lookup',
    arguments: { topic: 'x' },
    result: 'Facts about x',
    isError: false,
    error: null,
    startedAt: of.startedAt + 1,
    durationMs: 4,
  };
}

eachBackend('recorded LLM calls contract', (backend) => {
  it('failed attempts (provider down) are kept with their error, beside the thread’s other calls', async () => {
    const s = await backend.place().open();
    const down1 = attempt('asker', 't1', 'm1', 1_000, 1, 'network error: connect ECONNREFUSED 127.0.0.1:9');
    const down2 = attempt('asker', 't1', 'm1', 1_500, 2, 'network error: connect ECONNREFUSED 127.0.0.1:9');
    const answered = attempt('asker', 't1', 'm1', 2_000, 3);
    for (const c of [down1, down2, answered]) s.llmCalls.recordCall(c);
    expect((await s.llmCalls.forMessage('m1')).calls).toEqual([down1, down2, answered]);
    expect((await s.llmCalls.forThread('t1', { limit: 10, offset: 0 })).calls.map((c) => [c.attempt, c.error, c.response])).toEqual([
      [1, down1.error, null],
      [2, down2.error, null],
      [3, null, answered.response],
    ]);
  });

  it("an agent's calls: newest first across its threads, paged, with the tools of the page only; other agents' calls are not its", async () => {
    const s = await backend.place().open();
    const a1 = attempt('researcher', 't1', 'm1', 1_000);
    const a2 = attempt('researcher', 't2', 'm2', 3_000, 1, 'HTTP 500: boom');
    const a3 = attempt('researcher', 't1', 'm3', 2_000);
    const other = attempt('writer', 't1', 'm4', 4_000);
    for (const c of [a1, a2, a3, other]) s.llmCalls.recordCall(c);
    const tools = [toolOf(a1), toolOf(a3), toolOf(other)];
    for (const t of tools) s.llmCalls.recordTool(t);

    expect(await s.llmCalls.forAgent('researcher', { limit: 2, offset: 0 })).toEqual({ calls: [a2, a3], tools: [tools[1]], total: 3 });
    expect(await s.llmCalls.forAgent('researcher', { limit: 2, offset: 2 })).toEqual({ calls: [a1], tools: [tools[0]], total: 3 });
    expect(await s.llmCalls.forAgent('writer', { limit: 50, offset: 0 })).toEqual({ calls: [other], tools: [tools[2]], total: 1 });
    expect(await s.llmCalls.forAgent('nobody', { limit: 50, offset: 0 })).toEqual({ calls: [], tools: [], total: 0 });
    // A re-recorded call (the successful attempt completed with its cost) stays one call.
    s.llmCalls.recordCall({ ...a3, cost: 0.5 });
    expect((await s.llmCalls.forAgent('researcher', { limit: 50, offset: 0 })).calls.map((c) => c.cost)).toEqual([null, 0.5, 0.01]);
  });

  it('calls recorded before the agent column get their agent when the schema is brought up to date', async () => {
    const place = backend.place();
    const s = await place.open();
    const old = attempt('researcher', 't1', 'm1', 1_000);
    s.llmCalls.recordCall(old);
    await s.llmCalls.forMessage('m1'); // written
    await s.close();
    // Back to the schema before the migration: no index, no column.
    const [list, migration] = backend.name === 'sqlite' ? [MIGRATIONS, LLM_CALLS_AGENT_MIGRATION] : [PG_MIGRATIONS, PG_LLM_CALLS_AGENT_MIGRATION];
    const version = list.indexOf(migration);
    expect(version).toBeGreaterThan(0);
    // The test steps back over this migration and the ones after it, undoing each (PostgreSQL has
    // five more: its claim function, its check of lots written whole, and the claim replaced three times).
    expect(version).toBe(place.schemaVersion - (backend.name === 'sqlite' ? 7 : 12));
    await place.rows('DROP INDEX llm_calls_agent');
    await place.rows('ALTER TABLE llm_calls DROP COLUMN agent');
    await place.rows('ALTER TABLE journal DROP COLUMN next_attempt_at'); // the retries' next try time (issue 26)
    for (const column of ['expires_at', 'closed_by', 'closed_note']) await place.rows(`ALTER TABLE journal DROP COLUMN ${column}`); // asks (issue 25)
    await place.rows('ALTER TABLE journal DROP COLUMN approval'); // approvals (issue 25)
    for (const table of ['thread_holds', 'thread_erasures']) await place.rows(`DROP TABLE ${table}`); // holds and erasures (issue 30)
    await place.rows('DROP INDEX llm_calls_request_hash'); // request hashes (issue 29)
    await place.rows('ALTER TABLE llm_calls DROP COLUMN request_hash');
    for (const table of ['schedules', 'schedule_cursors', 'schedule_ticks', 'webhook_deliveries']) await place.rows(`DROP TABLE ${table}`); // schedules and webhooks (issue 31)
    if (backend.name !== 'sqlite') for (const fn of ['organism_claim', 'organism_check']) await place.rows(`DROP FUNCTION ${fn}`); // the claim function and the check of lots written whole (issue 28)
    await place.setSchemaVersion(version);
    const t = await place.open();
    expect((await t.llmCalls.forAgent('researcher', { limit: 50, offset: 0 })).calls).toEqual([old]);
  });

  it("time travel: a call keeps the hash of its request and whether it was replayed; hashed() lists a thread's hashed calls, oldest first, kept to the limit", async () => {
    const s = await backend.place().open();
    const old = attempt('researcher', 't1', 'm1', 1_000); // recorded before request hashes
    const first = { ...attempt('researcher', 't1', 'm1', 2_000), requestHash: 'a'.repeat(64) };
    const failed = { ...attempt('researcher', 't1', 'm1', 1_500, 1, 'HTTP 500: boom'), requestHash: 'b'.repeat(64) };
    const replayed = { ...attempt('writer', 't1', 'm2', 3_000), requestHash: 'c'.repeat(64), replayed: true, replayOf: newId(), cost: 0 };
    const elsewhere = { ...attempt('writer', 't2', 'm3', 2_500), requestHash: 'c'.repeat(64) };
    for (const c of [replayed, old, first, failed, elsewhere]) s.llmCalls.recordCall(c);
    expect(await s.llmCalls.hashed('t1', 10)).toEqual([failed, first, replayed]);
    expect(await s.llmCalls.hashed('t1', 2)).toEqual([failed, first]);
    expect(await s.llmCalls.hashed('t2', 10)).toEqual([elsewhere]);
    expect(await s.llmCalls.hashed('nope', 10)).toEqual([]);
    expect((await s.llmCalls.forMessage('m2')).calls).toEqual([replayed]);
  });
});
