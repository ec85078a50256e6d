import type Database from 'better-sqlite3';
import type { EarlierAttempt } from '../../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../../core/llm.js';
import type { ThreadEraser } from '../../core/storage.js';
import type { ThreadErasure } from '../../core/thread.js';
import { ERASED_PAYLOAD_JSON, erasedAttempts, erasedCall, erasedText, erasedTool } from '../erasure.js';
import type { GroupWriter } from './writer.js';

interface ErasureRow {
  thread_id: string;
  erased_by: string;
  erased_at: number;
  messages: number;
  llm_calls: number;
  tool_calls: number;
  events: number;
}

export const erasureFromRow = (r: ErasureRow): ThreadErasure => ({
  threadId: r.thread_id,
  by: r.erased_by,
  at: Number(r.erased_at),
  messages: Number(r.messages),
  llmCalls: Number(r.llm_calls),
  toolCalls: Number(r.tool_calls),
  events: Number(r.events),
});

/**
 * Erasure on SQLite (issue 30), in one transaction after every queued write committed: the
 * thread's journal payloads, errors, ask notes and approvals, its record's error, and its
 * recorded calls become tombstones; usage events and budgets (numbers) are not touched; the
 * erasure is recorded in thread_erasures.
 */
export class SqliteEraser implements ThreadEraser {
  constructor(
    private readonly db: Database.Database,
    private readonly writer: GroupWriter,
  ) {}

  async erase(threadId: string, by: string, at: number): Promise<ThreadErasure> {
    this.writer.flush();
    const db = this.db;
    return db.transaction((): ThreadErasure => {
      const entries = db.prepare('SELECT id, earlier_attempts FROM journal WHERE thread_id = ?').all(threadId) as Array<{ id: string; earlier_attempts: string | null }>;
      const attempts = db.prepare('UPDATE journal SET earlier_attempts = ? WHERE id = ?');
      for (const e of entries) {
        if (e.earlier_attempts !== null) attempts.run(JSON.stringify(erasedAttempts(JSON.parse(e.earlier_attempts) as EarlierAttempt[])), e.id);
      }
      db.prepare(
        `UPDATE journal SET payload = ?, error = CASE WHEN error IS NULL THEN NULL ELSE ? END,
           closed_note = CASE WHEN closed_note IS NULL THEN NULL ELSE ? END, approval = NULL WHERE thread_id = ?`,
      ).run(ERASED_PAYLOAD_JSON, erasedText(''), erasedText(''), threadId);
      db.prepare('UPDATE threads SET error = CASE WHEN error IS NULL THEN NULL ELSE ? END WHERE id = ?').run(erasedText(''), threadId);
      const calls = db.prepare('SELECT id, data FROM llm_calls WHERE thread_id = ?').all(threadId) as Array<{ id: string; data: string }>;
      const setCall = db.prepare('UPDATE llm_calls SET data = ? WHERE id = ?');
      for (const c of calls) setCall.run(JSON.stringify(erasedCall(JSON.parse(c.data) as LlmCallRecord)), c.id);
      const tools = db.prepare('SELECT id, data FROM llm_tool_calls WHERE thread_id = ?').all(threadId) as Array<{ id: string; data: string }>;
      const setTool = db.prepare('UPDATE llm_tool_calls SET data = ? WHERE id = ?');
      for (const t of tools) setTool.run(JSON.stringify(erasedTool(JSON.parse(t.data) as ToolCallRecord)), t.id);
      const erasure: ThreadErasure = { threadId, by, at, messages: entries.length, llmCalls: calls.length, toolCalls: tools.length, events: 0 };
      db.prepare('INSERT OR REPLACE INTO thread_erasures (thread_id, erased_by, erased_at, messages, llm_calls, tool_calls, events) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
        threadId,
        by,
        at,
        erasure.messages,
        erasure.llmCalls,
        erasure.toolCalls,
        0,
      );
      return erasure;
    })();
  }

  async erasureOf(threadId: string): Promise<ThreadErasure | null> {
    const row = this.db.prepare('SELECT * FROM thread_erasures WHERE thread_id = ?').get(threadId) as ErasureRow | undefined;
    return row ? erasureFromRow(row) : null;
  }
}
