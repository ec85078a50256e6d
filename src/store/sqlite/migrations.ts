import type Database from 'better-sqlite3';
import { RECOUNT_JOURNAL_SQL } from './journal-counts.js';
import { SQLITE_INTEROP_MIGRATION } from './interop.js';

/** A budget's share of its ceiling used (the order of every budget list). */
export const SHARE_USED = 'CASE WHEN max_tokens > 0 THEN (prompt_tokens + completion_tokens) * 1.0 / max_tokens ELSE 0 END';

/** An agent's recent LLM calls (GET /agents/{name}/llm-calls): the agent as a column, indexed; calls kept so far get theirs. */
export const LLM_CALLS_AGENT_MIGRATION = `
  ALTER TABLE llm_calls ADD COLUMN agent TEXT;
  UPDATE llm_calls SET agent = json_extract(data, '$.agent');
  CREATE INDEX llm_calls_agent ON llm_calls(agent, started_at);
`;

/** Schema versions, applied in order at open; `user_version` records the last one applied. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    payload_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    metadata TEXT NOT NULL,
    hops INTEGER NOT NULL,
    parent_id TEXT,
    msg_timestamp INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    dispatched_at INTEGER,
    acked_at INTEGER,
    failed_at INTEGER,
    failure_reason TEXT,
    error TEXT
  );
  CREATE INDEX journal_state ON journal(state, seq);
  CREATE INDEX journal_thread ON journal(thread_id, seq);
  CREATE INDEX journal_sender ON journal(sender, seq);
  CREATE INDEX journal_recipient ON journal(recipient, seq);
  CREATE INDEX journal_acked_at ON journal(acked_at) WHERE state = 'ACKED';
  CREATE INDEX journal_failed_at ON journal(failed_at) WHERE state = 'FAILED';

  CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    participants TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_activity INTEGER NOT NULL,
    error TEXT,
    metadata TEXT NOT NULL
  );
  CREATE INDEX threads_activity ON threads(last_activity DESC, id DESC);
  CREATE INDEX threads_status ON threads(status, last_activity DESC);

  CREATE TABLE budgets (thread_id TEXT PRIMARY KEY, data TEXT NOT NULL);

  CREATE TABLE usage_events (
    id TEXT PRIMARY KEY,
    ts INTEGER NOT NULL,
    thread_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    message_id TEXT,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    total_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    reasoning_tokens INTEGER,
    provider_latency_ms REAL NOT NULL,
    total_latency_ms REAL NOT NULL,
    cost REAL,
    org_id TEXT NOT NULL,
    user_id TEXT,
    metadata TEXT NOT NULL
  );
  CREATE INDEX usage_ts ON usage_events(ts DESC, id DESC);
  CREATE INDEX usage_org_ts ON usage_events(org_id, ts DESC);
  CREATE INDEX usage_agent_ts ON usage_events(agent_id, ts DESC);
  CREATE INDEX usage_model_ts ON usage_events(model, ts DESC);
  CREATE INDEX usage_message ON usage_events(message_id);

  -- Maintained on every insert, so billing and daily answers do not scan events.
  CREATE TABLE usage_daily (
    day TEXT NOT NULL,
    org_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    model TEXT NOT NULL,
    total_tokens INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    request_count INTEGER NOT NULL,
    total_cost REAL NOT NULL,
    unpriced_requests INTEGER NOT NULL,
    PRIMARY KEY (day, org_id, agent_id, model)
  );

  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  `,
  // Row counts kept in the same transactions as the rows, so list totals are lookups: COUNT(*)
  // over a 1M-row journal took 20-50 ms on the event loop. Journal counts are summed by the
  // store and written once per transaction (journal-counts.ts): a trigger costs ~3.5 µs per
  // row, as much as the insert itself. Threads are written less often and keep triggers.
  // Per-state counts come from the state indexes, the one big state (ACKED, completed) as the
  // remainder, so nothing runs on state changes.
  `
  CREATE TABLE row_counts (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO row_counts SELECT 'threads', COUNT(*) FROM threads;
  -- Entries an agent sent or received (one per entry when it sent to itself).
  CREATE TABLE journal_agent_counts (agent TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
  ${RECOUNT_JOURNAL_SQL}

  CREATE TRIGGER thread_count_insert AFTER INSERT ON threads BEGIN
    UPDATE row_counts SET n = n + 1 WHERE name = 'threads';
  END;
  CREATE TRIGGER thread_count_delete AFTER DELETE ON threads BEGIN
    UPDATE row_counts SET n = n - 1 WHERE name = 'threads';
  END;
  `,
  // Usage history filtered by thread or user (GET /usage/history?threadId=, ?userId=).
  `
  CREATE INDEX usage_thread_ts ON usage_events(thread_id, ts DESC);
  CREATE INDEX usage_user_ts ON usage_events(user_id, ts DESC);
  `,
  // Operator state that outlives the process: listeners the operator paused, and the ceiling
  // each finished thread had (its spend stays in usage_events).
  `
  CREATE TABLE paused_agents (agent TEXT PRIMARY KEY, since INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE thread_ceilings (thread_id TEXT PRIMARY KEY, max_tokens INTEGER NOT NULL) WITHOUT ROWID;
  `,
  // The W3C traceparent a message carries (OpenTelemetry): a thread stays one trace across restarts.
  `
  ALTER TABLE journal ADD COLUMN trace_context TEXT;
  `,
  // Every LLM call and MCP tool call, recorded with its delivery (llm.record); a delivery's
  // calls go when the journal prunes its entry.
  `
  CREATE TABLE llm_calls (
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    message_id TEXT,
    started_at INTEGER NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX llm_calls_message ON llm_calls(message_id, started_at);
  CREATE INDEX llm_calls_thread ON llm_calls(thread_id, started_at);
  CREATE TABLE llm_tool_calls (
    id TEXT PRIMARY KEY,
    llm_call_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    message_id TEXT,
    started_at INTEGER NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX llm_tool_calls_message ON llm_tool_calls(message_id, started_at);
  CREATE INDEX llm_tool_calls_thread ON llm_tool_calls(thread_id, started_at);
  CREATE TRIGGER llm_calls_pruned AFTER DELETE ON journal BEGIN
    DELETE FROM llm_calls WHERE message_id = old.id;
    DELETE FROM llm_tool_calls WHERE message_id = old.id;
  END;
  `,
  // A thread's budget is its whole life's (issue 23): when the thread finishes its budget is
  // kept here, spend and all, and its next inject goes on from it (live budgets are in memory
  // and in the budgets table; live = 1 marks a row whose thread runs again). The ceilings finished
  // threads had come over with their spend from the usage events, and the thresholds that
  // spend had reached counted as fired.
  `
  CREATE TABLE thread_budgets (
    thread_id TEXT PRIMARY KEY,
    max_tokens INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    fired TEXT NOT NULL,
    live INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;
  CREATE INDEX thread_budgets_order ON thread_budgets (live, (${SHARE_USED}) DESC, thread_id);
  INSERT INTO thread_budgets (thread_id, max_tokens, prompt_tokens, completion_tokens, fired)
    SELECT thread_id, max_tokens, p, c,
      CASE WHEN (p + c) * 100 >= 95 * max_tokens THEN '[75,90,95]' WHEN (p + c) * 100 >= 90 * max_tokens THEN '[75,90]'
        WHEN (p + c) * 100 >= 75 * max_tokens THEN '[75]' ELSE '[]' END
    FROM (
      SELECT t.thread_id, t.max_tokens, COALESCE(SUM(u.prompt_tokens), 0) AS p, COALESCE(SUM(u.completion_tokens), 0) AS c
      FROM thread_ceilings t LEFT JOIN usage_events u ON u.thread_id = t.thread_id GROUP BY t.thread_id, t.max_tokens
    );
  DROP TABLE thread_ceilings;
  `,
  // The attempts of a delivery before its latest one (JSON array of EarlierAttempt), written
  // when an entry goes back to PENDING (redeliver, recovery): the thread waterfall shows them.
  `
  ALTER TABLE journal ADD COLUMN earlier_attempts TEXT;
  `,
  // An agent's recent LLM calls (GET /agents/{name}/llm-calls).
  LLM_CALLS_AGENT_MIGRATION,
  // A retry waiting out its listener's backoff (issue 26): not delivered before this time (ms);
  // recovery after a restart hands it back with it, so it is neither run early nor lost.
  `
  ALTER TABLE journal ADD COLUMN next_attempt_at INTEGER;
  `,
  // Asks to people (issue 25): an AWAITING entry's expiry, and who closed it with what note.
  `
  ALTER TABLE journal ADD COLUMN expires_at INTEGER;
  ALTER TABLE journal ADD COLUMN closed_by TEXT;
  ALTER TABLE journal ADD COLUMN closed_note TEXT;
  `,
  // Tool calls that need approval (issue 25): the proposal and the conversation so far (JSON),
  // and once decided the decision, so that a restart continues the delivery from it.
  `
  ALTER TABLE journal ADD COLUMN approval TEXT;
  `,
  // Safety rails (issue 30): a thread's hold (an operator's pause or the loop breaker's), kept
  // after a resume (held = 0) for the loop breaker's baseline and raised limits; and the
  // erasures of threads (who erased what, when).
  `
  CREATE TABLE thread_holds (
    thread_id TEXT PRIMARY KEY,
    held INTEGER NOT NULL,
    rule TEXT NOT NULL,
    reason TEXT NOT NULL,
    evidence TEXT,
    held_by TEXT NOT NULL,
    held_at INTEGER NOT NULL,
    resumed_at INTEGER,
    resumed_by TEXT,
    limit_factor INTEGER NOT NULL DEFAULT 1
  ) WITHOUT ROWID;
  CREATE INDEX thread_holds_held ON thread_holds (held, held_at);
  CREATE TABLE thread_erasures (
    thread_id TEXT PRIMARY KEY,
    erased_by TEXT NOT NULL,
    erased_at INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    llm_calls INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    events INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // Time travel (issue 29): the hash of each LLM request as it was sent (before llm.record
  // drops or redacts anything), by which a fork finds the recorded call that answers it.
  `
  ALTER TABLE llm_calls ADD COLUMN request_hash TEXT;
  CREATE INDEX llm_calls_request_hash ON llm_calls (thread_id, request_hash);
  `,
  // Schedules and signed webhooks (issue 31).
  SQLITE_INTEROP_MIGRATION,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new Error(`database schema version ${current} is newer than this organism (${SCHEMA_VERSION})`);
  }
  for (let v = current; v < SCHEMA_VERSION; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
