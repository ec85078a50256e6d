import type Database from 'better-sqlite3';
import type { LlmCallRecord, ToolCallRecord } from '../../llm/call-record.js';
import type { LlmCallStore, RecordedCalls } from '../../core/storage.js';
import { prepared } from './prepared.js';
import type { GroupWriter } from './writer.js';

interface CallRow {
  data: string;
}

/**
 * LLM and tool calls in SQLite, written through the group writer (so a burst of calls shares a
 * commit). Each row keeps the record as JSON beside the columns it is found by; triggers
 * (migration 3) delete a delivery's calls when the journal prunes its entry.
 */
export class SqliteLlmCallStore implements LlmCallStore {
  private readonly insertCall: Database.Statement;
  private readonly insertTool: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly writer: GroupWriter,
  ) {
    this.insertCall = db.prepare(`INSERT OR REPLACE INTO llm_calls (id, thread_id, message_id, agent, started_at, data, request_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    this.insertTool = db.prepare(`INSERT OR REPLACE INTO llm_tool_calls (id, llm_call_id, thread_id, message_id, started_at, data) VALUES (?, ?, ?, ?, ?, ?)`);
  }

  recordCall(r: LlmCallRecord): void {
    const data = JSON.stringify(r);
    void this.writer
      .write(() => this.insertCall.run(r.id, r.threadId, r.messageId, r.agent, r.startedAt, data, r.requestHash ?? null))
      .catch(() => {
        // reported by the writer's error handler
      });
  }

  recordTool(r: ToolCallRecord): void {
    const data = JSON.stringify(r);
    void this.writer.write(() => this.insertTool.run(r.id, r.llmCallId, r.threadId, r.messageId, r.startedAt, data)).catch(() => {});
  }

  async forMessage(messageId: string): Promise<RecordedCalls> {
    this.writer.flush();
    const calls = this.parse<LlmCallRecord>(prepared(this.db, 'SELECT data FROM llm_calls WHERE message_id = ? ORDER BY started_at, rowid').all(messageId));
    const tools = this.parse<ToolCallRecord>(prepared(this.db, 'SELECT data FROM llm_tool_calls WHERE message_id = ? ORDER BY started_at, rowid').all(messageId));
    return { calls, tools, total: calls.length };
  }

  async forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    this.writer.flush();
    const calls = this.parse<LlmCallRecord>(
      prepared(this.db, 'SELECT data FROM llm_calls WHERE thread_id = ? ORDER BY started_at, rowid LIMIT ? OFFSET ?').all(threadId, page.limit, page.offset),
    );
    const total = (prepared(this.db, 'SELECT COUNT(*) AS n FROM llm_calls WHERE thread_id = ?').get(threadId) as { n: number }).n;
    const ids = new Set(calls.map((c) => c.id));
    const tools = this.parse<ToolCallRecord>(prepared(this.db, 'SELECT data FROM llm_tool_calls WHERE thread_id = ? ORDER BY started_at, rowid').all(threadId)).filter((t) =>
      ids.has(t.llmCallId),
    );
    return { calls, tools, total };
  }

  async forAgent(agent: string, page: { limit: number; offset: number }): Promise<RecordedCalls> {
    this.writer.flush();
    const calls = this.parse<LlmCallRecord>(
      prepared(this.db, 'SELECT data FROM llm_calls WHERE agent = ? ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?').all(agent, page.limit, page.offset),
    );
    const total = (prepared(this.db, 'SELECT COUNT(*) AS n FROM llm_calls WHERE agent = ?').get(agent) as { n: number }).n;
    // The page's tool calls, found through their deliveries (indexed), then kept to the page's calls.
    const ids = new Set(calls.map((c) => c.id));
    const tools: ToolCallRecord[] = [];
    for (const messageId of new Set(calls.map((c) => c.messageId).filter((m): m is string => m !== null))) {
      tools.push(...this.parse<ToolCallRecord>(prepared(this.db, 'SELECT data FROM llm_tool_calls WHERE message_id = ? ORDER BY started_at, rowid').all(messageId)));
    }
    return { calls, tools: tools.filter((t) => ids.has(t.llmCallId)), total };
  }

  async hashed(threadId: string, limit: number): Promise<LlmCallRecord[]> {
    this.writer.flush();
    return this.parse<LlmCallRecord>(
      prepared(this.db, 'SELECT data FROM llm_calls WHERE thread_id = ? AND request_hash IS NOT NULL ORDER BY started_at, rowid LIMIT ?').all(threadId, limit),
    );
  }

  private parse<T>(rows: unknown[]): T[] {
    return (rows as CallRow[]).map((r) => JSON.parse(r.data) as T);
  }
}
