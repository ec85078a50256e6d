import type { LlmCallRecord, ToolCallRecord } from '../../llm/call-record.js';
import type { LlmCallStore, RecordedCalls } from '../../core/storage.js';
import type { Reader } from './pool.js';
import type { PgWriter } from './writer.js';

/**
 * LLM and tool calls on PostgreSQL, written behind through the writer (a burst of calls shares
 * a commit). Each row keeps the record as JSON beside the columns it is found by; the journal
 * deletes a delivery's calls when it prunes its entry.
 */
export class PgLlmCallStore implements LlmCallStore {
  constructor(
    private readonly pool: Reader,
    private readonly writer: PgWriter,
  ) {}

  recordCall(r: LlmCallRecord): void {
    const data = JSON.stringify(r);
    void this.writer
      .write(async (tx) => {
        await tx.query(
          `INSERT INTO llm_calls (id, thread_id, message_id, agent, started_at, data, request_hash) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, message_id = excluded.message_id, agent = excluded.agent, started_at = excluded.started_at, data = excluded.data,
             request_hash = excluded.request_hash`,
          [r.id, r.threadId, r.messageId, r.agent, r.startedAt, data, r.requestHash ?? null],
        );
      })
      .catch(() => {}); // reported by the writer's error handler
  }

  recordTool(r: ToolCallRecord): void {
    const data = JSON.stringify(r);
    void this.writer
      .write(async (tx) => {
        await tx.query(
          `INSERT INTO llm_tool_calls (id, llm_call_id, thread_id, message_id, started_at, data) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (id) DO UPDATE SET llm_call_id = excluded.llm_call_id, thread_id = excluded.thread_id, message_id = excluded.message_id,
             started_at = excluded.started_at, data = excluded.data`,
          [r.id, r.llmCallId, r.threadId, r.messageId, r.startedAt, data],
        );
      })
      .catch(() => {});
  }

  async forMessage(messageId: string): Promise<RecordedCalls> {
    await this.writer.flush();
    const [calls, tools] = await Promise.all([
      this.records<LlmCallRecord>('SELECT data FROM llm_calls WHERE message_id = $1 ORDER BY started_at, seq', [messageId]),
      this.records<ToolCallRecord>('SELECT data FROM llm_tool_calls WHERE message_id = $1 ORDER BY started_at, seq', [messageId]),
    ]);
    return { calls, tools, total: calls.length };
  }

  async forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    await this.writer.flush();
    const calls = await this.records<LlmCallRecord>('SELECT data FROM llm_calls WHERE thread_id = $1 ORDER BY started_at, seq LIMIT $2 OFFSET $3', [threadId, page.limit, page.offset]);
    const total = (await this.pool.query<{ n: number }>('SELECT COUNT(*) AS n FROM llm_calls WHERE thread_id = $1', [threadId])).rows[0]!.n;
    const ids = new Set(calls.map((c) => c.id));
    const tools = (await this.records<ToolCallRecord>('SELECT data FROM llm_tool_calls WHERE thread_id = $1 ORDER BY started_at, seq', [threadId])).filter((t) => ids.has(t.llmCallId));
    return { calls, tools, total };
  }

  async hashed(threadId: string, limit: number): Promise<LlmCallRecord[]> {
    await this.writer.flush();
    return this.records<LlmCallRecord>('SELECT data FROM llm_calls WHERE thread_id = $1 AND request_hash IS NOT NULL ORDER BY started_at, seq LIMIT $2', [threadId, limit]);
  }

  async forAgent(agent: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    await this.writer.flush();
    const calls = await this.records<LlmCallRecord>('SELECT data FROM llm_calls WHERE agent = $1 ORDER BY started_at DESC, seq DESC LIMIT $2 OFFSET $3', [agent, page.limit, page.offset]);
    const total = (await this.pool.query<{ n: number }>('SELECT COUNT(*) AS n FROM llm_calls WHERE agent = $1', [agent])).rows[0]!.n;
    // The page's tool calls, found through their deliveries (indexed), then kept to the page's calls.
    const ids = new Set(calls.map((c) => c.id));
    const messageIds = [...new Set(calls.map((c) => c.messageId).filter((m): m is string => m !== null))];
    const tools =
      messageIds.length === 0
        ? []
        : (await this.records<ToolCallRecord>('SELECT data FROM llm_tool_calls WHERE message_id = ANY($1) ORDER BY started_at, seq', [messageIds])).filter((t) => ids.has(t.llmCallId));
    return { calls, tools, total };
  }

  private async records<T>(sql: string, params: unknown[]): Promise<T[]> {
    return (await this.pool.query<{ data: string }>(sql, params)).rows.map((r) => JSON.parse(r.data) as T);
  }
}
