import type { EarlierAttempt } from '../../core/journal.js';
import type { LlmCallRecord, ToolCallRecord } from '../../core/llm.js';
import type { ThreadEraser } from '../../core/storage.js';
import { ERASED, type ThreadErasure } from '../../core/thread.js';
import { ERASED_PAYLOAD_JSON, erasedAttempts, erasedCall, erasedTool } from '../erasure.js';
import { erasureFromRow } from '../sqlite/eraser.js';
import type { Reader } from './pool.js';
import type { PgWriter } from './writer.js';

/**
 * Erasure on PostgreSQL (issue 30), in one transaction through the writer (after every write
 * queued before it): the thread's journal payloads, errors, ask notes and approvals, its
 * record's error and its recorded calls become tombstones; the bodies of its events waiting in
 * event_bodies (a cluster's relay) are deleted; usage events and budgets are not touched; the
 * erasure is recorded in thread_erasures.
 */
export class PgEraser implements ThreadEraser {
  constructor(
    private readonly db: Reader,
    private readonly writer: PgWriter,
  ) {}

  async erase(threadId: string, by: string, at: number): Promise<ThreadErasure> {
    let erasure: ThreadErasure | null = null;
    await this.writer.write(async (tx) => {
      const entries = (await tx.query<{ id: string; earlier_attempts: string | null }>('SELECT id, earlier_attempts FROM journal WHERE thread_id = $1 FOR UPDATE', [threadId])).rows;
      for (const e of entries) {
        if (e.earlier_attempts !== null)
          await tx.query('UPDATE journal SET earlier_attempts = $1 WHERE id = $2', [JSON.stringify(erasedAttempts(JSON.parse(e.earlier_attempts) as EarlierAttempt[])), e.id]);
      }
      await tx.query(
        `UPDATE journal SET payload = $1, error = CASE WHEN error IS NULL THEN NULL ELSE $2 END,
           closed_note = CASE WHEN closed_note IS NULL THEN NULL ELSE $2 END, approval = NULL WHERE thread_id = $3`,
        [ERASED_PAYLOAD_JSON, ERASED, threadId],
      );
      await tx.query('UPDATE threads SET error = CASE WHEN error IS NULL THEN NULL ELSE $1 END WHERE id = $2', [ERASED, threadId]);
      const calls = (await tx.query<{ id: string; data: string }>('SELECT id, data FROM llm_calls WHERE thread_id = $1 FOR UPDATE', [threadId])).rows;
      for (const c of calls) await tx.query('UPDATE llm_calls SET data = $1 WHERE id = $2', [JSON.stringify(erasedCall(JSON.parse(c.data) as LlmCallRecord)), c.id]);
      const tools = (await tx.query<{ id: string; data: string }>('SELECT id, data FROM llm_tool_calls WHERE thread_id = $1 FOR UPDATE', [threadId])).rows;
      for (const t of tools) await tx.query('UPDATE llm_tool_calls SET data = $1 WHERE id = $2', [JSON.stringify(erasedTool(JSON.parse(t.data) as ToolCallRecord)), t.id]);
      // Event bodies (a cluster's relay, pruned after a minute) that mention the thread.
      const events = (await tx.query('DELETE FROM event_bodies WHERE strpos(body, $1) > 0', [JSON.stringify(threadId)])).rowCount ?? 0;
      erasure = { threadId, by, at, messages: entries.length, llmCalls: calls.length, toolCalls: tools.length, events };
      await tx.query(
        `INSERT INTO thread_erasures (thread_id, erased_by, erased_at, messages, llm_calls, tool_calls, events) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (thread_id) DO UPDATE SET erased_by = excluded.erased_by, erased_at = excluded.erased_at, messages = excluded.messages,
           llm_calls = excluded.llm_calls, tool_calls = excluded.tool_calls, events = excluded.events`,
        [threadId, by, at, entries.length, calls.length, tools.length, events],
      );
    });
    return erasure!;
  }

  async erasureOf(threadId: string): Promise<ThreadErasure | null> {
    await this.writer.flush();
    const row = (await this.db.query<Parameters<typeof erasureFromRow>[0]>('SELECT * FROM thread_erasures WHERE thread_id = $1', [threadId])).rows[0];
    return row ? erasureFromRow(row) : null;
  }
}
