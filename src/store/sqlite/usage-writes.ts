import type Database from 'better-sqlite3';
import type { UsageEvent } from '../../usage/types.js';
import { utcDay } from '../usage-days.js';

/** Inserts usage events once each (by id) and keeps the daily rollup in step. */
export function usageInserter(db: Database.Database): (events: readonly UsageEvent[]) => void {
  const insert = db.prepare(`INSERT OR IGNORE INTO usage_events
    (id, ts, thread_id, agent_id, message_id, model, provider, prompt_tokens, completion_tokens, total_tokens,
     cache_read_tokens, cache_write_tokens, reasoning_tokens, provider_latency_ms, total_latency_ms, cost, org_id, user_id, metadata)
    VALUES (@id, @ts, @threadId, @agentId, @messageId, @model, @provider, @promptTokens, @completionTokens, @totalTokens,
     @cacheReadTokens, @cacheWriteTokens, @reasoningTokens, @providerLatencyMs, @totalLatencyMs, @cost, @orgId, @userId, @metadata)`);
  const rollup = db.prepare(`INSERT INTO usage_daily
    (day, org_id, agent_id, model, total_tokens, prompt_tokens, completion_tokens, request_count, total_cost, unpriced_requests)
    VALUES (@day, @orgId, @agentId, @model, @totalTokens, @promptTokens, @completionTokens, 1, @cost, @unpriced)
    ON CONFLICT (day, org_id, agent_id, model) DO UPDATE SET
      total_tokens = total_tokens + excluded.total_tokens,
      prompt_tokens = prompt_tokens + excluded.prompt_tokens,
      completion_tokens = completion_tokens + excluded.completion_tokens,
      request_count = request_count + 1,
      total_cost = total_cost + excluded.total_cost,
      unpriced_requests = unpriced_requests + excluded.unpriced_requests`);
  return (events) => {
    for (const e of events) {
      const orgId = e.metadata['orgId'] ?? '';
      const row = {
        id: e.id,
        ts: e.timestamp,
        threadId: e.threadId,
        agentId: e.agentId,
        messageId: e.messageId,
        model: e.model,
        provider: e.provider,
        promptTokens: e.promptTokens,
        completionTokens: e.completionTokens,
        totalTokens: e.totalTokens,
        cacheReadTokens: e.cacheReadTokens,
        cacheWriteTokens: e.cacheWriteTokens,
        reasoningTokens: e.reasoningTokens,
        providerLatencyMs: e.providerLatencyMs,
        totalLatencyMs: e.totalLatencyMs,
        cost: e.cost,
        orgId,
        userId: e.metadata['userId'] ?? null,
        metadata: JSON.stringify(e.metadata),
      };
      // Only a newly inserted event counts in the rollup (a redelivery is never billed twice).
      if (insert.run(row).changes === 1) {
        rollup.run({
          day: utcDay(e.timestamp),
          orgId,
          agentId: e.agentId,
          model: e.model,
          totalTokens: e.totalTokens,
          promptTokens: e.promptTokens,
          completionTokens: e.completionTokens,
          cost: e.cost ?? 0,
          unpriced: e.cost === null ? 1 : 0,
        });
      }
    }
  };
}
