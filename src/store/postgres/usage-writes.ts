import type { UsageEvent } from '../../usage/types.js';
import type { Tx } from './writer.js';

/**
 * Inserts usage events once each (by id) and adds the newly inserted ones to the daily rollup,
 * in one statement: a redelivered ack's events are never billed twice. The UTC day is computed
 * from the ms timestamp without time zones, as utcDay() does. `atCommit`: sent with the
 * COMMIT when its values can be written in (nothing is read back).
 */
export async function insertUsage(tx: Tx, events: readonly UsageEvent[], o: { atCommit?: boolean } = {}): Promise<void> {
  if (events.length === 0) return;
  const col = <T>(f: (e: UsageEvent) => T) => events.map(f);
  const statement = {
    name: 'usage-insert',
    text: `WITH ins AS (
       INSERT INTO usage_events (id, ts, thread_id, agent_id, message_id, model, provider, prompt_tokens, completion_tokens, total_tokens,
         cache_read_tokens, cache_write_tokens, reasoning_tokens, provider_latency_ms, total_latency_ms, cost, org_id, user_id, metadata)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[],
         $11::bigint[], $12::bigint[], $13::bigint[], $14::float8[], $15::float8[], $16::float8[], $17::text[], $18::text[], $19::text[])
       ON CONFLICT (id) DO NOTHING
       RETURNING ts, org_id, agent_id, model, total_tokens, prompt_tokens, completion_tokens, cost
     )
     INSERT INTO usage_daily AS d (day, org_id, agent_id, model, total_tokens, prompt_tokens, completion_tokens, request_count, total_cost, unpriced_requests)
     SELECT to_char(timestamp '1970-01-01' + ts * interval '1 millisecond', 'YYYY-MM-DD'), org_id, agent_id, model,
       SUM(total_tokens), SUM(prompt_tokens), SUM(completion_tokens), COUNT(*), COALESCE(SUM(cost), 0), COUNT(*) FILTER (WHERE cost IS NULL)
     FROM ins GROUP BY 1, org_id, agent_id, model
     ON CONFLICT (day, org_id, agent_id, model) DO UPDATE SET
       total_tokens = d.total_tokens + excluded.total_tokens,
       prompt_tokens = d.prompt_tokens + excluded.prompt_tokens,
       completion_tokens = d.completion_tokens + excluded.completion_tokens,
       request_count = d.request_count + excluded.request_count,
       total_cost = d.total_cost + excluded.total_cost,
       unpriced_requests = d.unpriced_requests + excluded.unpriced_requests`,
    values: [
      col((e) => e.id),
      col((e) => e.timestamp),
      col((e) => e.threadId),
      col((e) => e.agentId),
      col((e) => e.messageId),
      col((e) => e.model),
      col((e) => e.provider),
      col((e) => e.promptTokens),
      col((e) => e.completionTokens),
      col((e) => e.totalTokens),
      col((e) => e.cacheReadTokens),
      col((e) => e.cacheWriteTokens),
      col((e) => e.reasoningTokens),
      col((e) => e.providerLatencyMs),
      col((e) => e.totalLatencyMs),
      col((e) => e.cost),
      col((e) => e.metadata['orgId'] ?? ''),
      col((e) => e.metadata['userId'] ?? null),
      col((e) => JSON.stringify(e.metadata)),
    ],
  };
  if (o.atCommit && tx.atCommit(statement)) return;
  await tx.query(statement);
}
