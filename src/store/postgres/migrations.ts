import type pg from 'pg';
import { BUDGET_LEDGER_MIGRATION, BUDGET_LIFETIME_MIGRATION } from './budget-ledger.js';
import { PG_CLAIM_BOOKING_MIGRATION, PG_CLAIM_FUNCTION_MIGRATION, PG_CLAIM_LOOKUP_MIGRATION, PG_CLAIM_RUNNING_MIGRATION } from './claim-function.js';
import { PG_LOT_CHECK_MIGRATION } from './lot-check.js';
import { PG_INTEROP_MIGRATION } from './interop.js';

/**
 * Schema versions, applied in order at open in one transaction (DDL is transactional in
 * PostgreSQL: a failed upgrade leaves the previous version whole); `schema_version`
 * records the last one applied. Times are ms since the epoch (BIGINT) as in SQLite; JSON
 * documents stay TEXT so a payload reads back byte for byte as written (jsonb would reorder
 * its keys). Ids that break ties in lists sort by bytes (COLLATE "C"), as in SQLite, whatever
 * the database's collation. Counts that list totals read are kept in `row_counts` in the same transactions
 * as the rows (see journal-counts.ts): COUNT(*) in PostgreSQL reads every row it counts.
 */
/** An agent's recent LLM calls (GET /agents/{name}/llm-calls): the agent as a column, indexed; calls kept so far get theirs. */
export const PG_LLM_CALLS_AGENT_MIGRATION = `
  ALTER TABLE llm_calls ADD COLUMN agent TEXT;
  UPDATE llm_calls SET agent = (data::json)->>'agent';
  CREATE INDEX llm_calls_agent ON llm_calls (agent, started_at, seq);
`;

export const PG_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE journal (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    payload_type TEXT NOT NULL,
    payload TEXT NOT NULL,
    metadata TEXT NOT NULL,
    hops INTEGER NOT NULL,
    parent_id TEXT,
    msg_timestamp BIGINT NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('PENDING', 'DISPATCHED', 'ACKED', 'FAILED')),
    attempts INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    dispatched_at BIGINT,
    acked_at BIGINT,
    failed_at BIGINT,
    failure_reason TEXT,
    error TEXT,
    trace_context TEXT
  );
  CREATE INDEX journal_state ON journal (state, seq);
  CREATE INDEX journal_thread ON journal (thread_id, seq);
  CREATE INDEX journal_sender ON journal (sender, seq);
  CREATE INDEX journal_recipient ON journal (recipient, seq);
  CREATE INDEX journal_acked_at ON journal (acked_at) WHERE state = 'ACKED';
  CREATE INDEX journal_failed_at ON journal (failed_at) WHERE state = 'FAILED';

  CREATE TABLE threads (
    id TEXT COLLATE "C" PRIMARY KEY,
    status TEXT NOT NULL,
    participants TEXT[] NOT NULL,
    message_count INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    last_activity BIGINT NOT NULL,
    error TEXT,
    metadata TEXT NOT NULL
  );
  CREATE INDEX threads_activity ON threads (last_activity DESC, id DESC);
  CREATE INDEX threads_status ON threads (status, last_activity DESC);
  CREATE INDEX threads_participants ON threads USING GIN (participants);

  CREATE TABLE budgets (thread_id TEXT PRIMARY KEY, data TEXT NOT NULL);

  CREATE TABLE usage_events (
    id TEXT COLLATE "C" PRIMARY KEY,
    ts BIGINT NOT NULL,
    thread_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    message_id TEXT,
    model TEXT NOT NULL,
    provider TEXT NOT NULL,
    prompt_tokens BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    total_tokens BIGINT NOT NULL,
    cache_read_tokens BIGINT,
    cache_write_tokens BIGINT,
    reasoning_tokens BIGINT,
    provider_latency_ms DOUBLE PRECISION NOT NULL,
    total_latency_ms DOUBLE PRECISION NOT NULL,
    cost DOUBLE PRECISION,
    org_id TEXT NOT NULL,
    user_id TEXT,
    metadata TEXT NOT NULL
  );
  CREATE INDEX usage_ts ON usage_events (ts DESC, id DESC);
  CREATE INDEX usage_org_ts ON usage_events (org_id, ts DESC);
  CREATE INDEX usage_agent_ts ON usage_events (agent_id, ts DESC);
  CREATE INDEX usage_model_ts ON usage_events (model, ts DESC);
  CREATE INDEX usage_message ON usage_events (message_id);
  CREATE INDEX usage_thread_ts ON usage_events (thread_id, ts DESC);
  CREATE INDEX usage_user_ts ON usage_events (user_id, ts DESC);

  -- Maintained with every insert, so billing and daily answers do not scan events.
  CREATE TABLE usage_daily (
    day TEXT COLLATE "C" NOT NULL,
    org_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    model TEXT NOT NULL,
    total_tokens BIGINT NOT NULL,
    prompt_tokens BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    request_count BIGINT NOT NULL,
    total_cost DOUBLE PRECISION NOT NULL,
    unpriced_requests BIGINT NOT NULL,
    PRIMARY KEY (day, org_id, agent_id, model)
  );

  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

  -- 'journal' (all entries), 'journal:<STATE>' (entries per state), 'threads' (all threads).
  CREATE TABLE row_counts (name TEXT PRIMARY KEY, n BIGINT NOT NULL);
  INSERT INTO row_counts (name, n) VALUES ('journal', 0), ('journal:PENDING', 0), ('journal:DISPATCHED', 0), ('journal:ACKED', 0), ('journal:FAILED', 0), ('threads', 0);
  -- Entries an agent sent or received (one per entry when it sent to itself).
  CREATE TABLE journal_agent_counts (agent TEXT PRIMARY KEY, n BIGINT NOT NULL);

  CREATE TABLE paused_agents (agent TEXT PRIMARY KEY, since BIGINT NOT NULL);
  CREATE TABLE thread_ceilings (thread_id TEXT PRIMARY KEY, max_tokens BIGINT NOT NULL);

  -- Every LLM call and MCP tool call of a delivery; they go when the journal prunes its entry.
  CREATE TABLE llm_calls (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    id TEXT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    message_id TEXT,
    started_at BIGINT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX llm_calls_message ON llm_calls (message_id, started_at, seq);
  CREATE INDEX llm_calls_thread ON llm_calls (thread_id, started_at, seq);
  CREATE TABLE llm_tool_calls (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    id TEXT PRIMARY KEY,
    llm_call_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    message_id TEXT,
    started_at BIGINT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX llm_tool_calls_message ON llm_tool_calls (message_id, started_at, seq);
  CREATE INDEX llm_tool_calls_thread ON llm_tool_calls (thread_id, started_at, seq);
  `,
  // Cluster mode (issue 15): the processes sharing the database, and which of them holds each
  // DISPATCHED entry. A worker's claims are taken back once its heartbeat is older than its
  // lease (lease_ms, its own setting) or it stopped. Meta keys config_hash / config_text hold
  // the organism a serve process runs (written at boot and reload).
  `
  CREATE TABLE workers (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('serve', 'worker')),
    name TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    handlers BOOLEAN NOT NULL,
    config_hash TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    stopped_at BIGINT,
    concurrency INTEGER,
    in_flight INTEGER NOT NULL DEFAULT 0,
    lease_ms INTEGER NOT NULL
  );
  CREATE INDEX workers_started ON workers (started_at DESC, id);
  ALTER TABLE journal ADD COLUMN claimed_by TEXT;
  -- What claims read: each recipient's PENDING entries in order, and a (thread, recipient)'s open ones.
  CREATE INDEX journal_claimable ON journal (recipient, seq) WHERE state = 'PENDING';
  CREATE INDEX journal_open ON journal (thread_id, recipient, seq) WHERE state IN ('PENDING', 'DISPATCHED');
  CREATE INDEX journal_claimed ON journal (claimed_by) WHERE state = 'DISPATCHED';
  `,
  // Events across processes (issue 15): every bus event a process publishes takes the next
  // event_seq; one too large for a NOTIFY payload waits here (pruned after a minute) and the
  // notification carries its seq.
  `
  CREATE SEQUENCE event_seq;
  CREATE TABLE event_bodies (seq BIGINT PRIMARY KEY, origin TEXT NOT NULL, at BIGINT NOT NULL, body TEXT NOT NULL);
  CREATE INDEX event_bodies_at ON event_bodies (at);
  `,
  // Budgets as rows reserved against atomically by every process (scale-out, issue 15).
  BUDGET_LEDGER_MIGRATION,
  // Kept counts in slots (issue 15): one row per count was one row every process's every
  // transaction updated, and they queued on its lock. Now each process adds to its own slot
  // (its worker id; '' for the base and for a single-owner organism), a count is the sum of its
  // slots, and the slots of stopped processes are folded into the base (see journal-counts.ts).
  `
  ALTER TABLE row_counts ADD COLUMN slot TEXT COLLATE "C" NOT NULL DEFAULT '';
  ALTER TABLE row_counts DROP CONSTRAINT row_counts_pkey, ADD PRIMARY KEY (name, slot);
  ALTER TABLE journal_agent_counts ADD COLUMN slot TEXT COLLATE "C" NOT NULL DEFAULT '';
  ALTER TABLE journal_agent_counts DROP CONSTRAINT journal_agent_counts_pkey, ADD PRIMARY KEY (agent, slot);
  `,
  // A budget kept for its thread's whole life (issue 23).
  BUDGET_LIFETIME_MIGRATION,
  // The attempts of a delivery before its latest one (JSON array of EarlierAttempt), written
  // when an entry goes back to PENDING (redeliver, recovery, a lease taken back).
  `
  ALTER TABLE journal ADD COLUMN earlier_attempts TEXT;
  `,
  // An agent's recent LLM calls (GET /agents/{name}/llm-calls).
  PG_LLM_CALLS_AGENT_MIGRATION,
  // A retry waiting out its listener's backoff (issue 26): not claimed before this time (ms).
  `
  ALTER TABLE journal ADD COLUMN next_attempt_at BIGINT;
  `,
  // Asks to people (issue 25): the AWAITING state, an ask's expiry, and who closed it with what note.
  `
  ALTER TABLE journal DROP CONSTRAINT journal_state_check;
  ALTER TABLE journal ADD CONSTRAINT journal_state_check CHECK (state IN ('PENDING', 'DISPATCHED', 'AWAITING', 'ACKED', 'FAILED'));
  ALTER TABLE journal ADD COLUMN expires_at BIGINT, ADD COLUMN closed_by TEXT, ADD COLUMN closed_note TEXT;
  `,
  // Tool calls that need approval (issue 25): the proposal and the conversation so far (JSON),
  // and once decided the decision, so that a restart (or any worker) continues from it.
  `
  ALTER TABLE journal ADD COLUMN approval TEXT;
  `,
  // Safety rails (issue 30): a thread's hold (an operator's pause or the loop breaker's), which
  // every process's claim passes over, kept after a resume (held false) for the loop breaker's
  // baseline and raised limits; and the erasures of threads (who erased what, when).
  `
  CREATE TABLE thread_holds (
    thread_id TEXT PRIMARY KEY,
    held BOOLEAN NOT NULL,
    rule TEXT NOT NULL,
    reason TEXT NOT NULL,
    evidence TEXT,
    held_by TEXT NOT NULL,
    held_at BIGINT NOT NULL,
    resumed_at BIGINT,
    resumed_by TEXT,
    limit_factor INTEGER NOT NULL DEFAULT 1
  );
  CREATE INDEX thread_holds_held ON thread_holds (thread_id) WHERE held;
  CREATE TABLE thread_erasures (
    thread_id TEXT PRIMARY KEY,
    erased_by TEXT NOT NULL,
    erased_at BIGINT NOT NULL,
    messages INTEGER NOT NULL,
    llm_calls INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    events INTEGER NOT NULL
  );
  `,
  // Time travel (issue 29): the hash of each LLM request as it was sent (before llm.record
  // drops or redacts anything), by which a fork finds the recorded call that answers it.
  `
  ALTER TABLE llm_calls ADD COLUMN request_hash TEXT;
  CREATE INDEX llm_calls_request_hash ON llm_calls (thread_id, request_hash);
  `,
  // Schedules and signed webhooks (issue 31).
  PG_INTEROP_MIGRATION,
  // The claim as a server function, its plans kept per connection (issue 28).
  PG_CLAIM_FUNCTION_MIGRATION,
  // Lots of outcomes and injects checked with their COMMIT, in one round trip (issue 28).
  PG_LOT_CHECK_MIGRATION,
  // The claim's booking looked up in a hash (issue 28).
  PG_CLAIM_BOOKING_MIGRATION,
  // The claimer's running handlers sent with the claim; its own entries not read (issue 28).
  PG_CLAIM_RUNNING_MIGRATION,
  // Each claimed row locked by its recipient and seq, a lookup whatever the kept plan (issue 28).
  PG_CLAIM_LOOKUP_MIGRATION,
];

export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/** Any number: one lock id for "organism migrates this schema", so two processes starting together take turns. */
const MIGRATION_LOCK = 0x6f7267616e69;

/**
 * Brings the schema up to date, refusing one written by a newer organism. Serialized across
 * processes by an advisory lock held for the migration's transaction.
 */
export async function migratePg(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const row = (await client.query<{ version: number }>('SELECT version FROM schema_version')).rows[0];
    if (!row) await client.query('INSERT INTO schema_version (version) VALUES (0)');
    const current = row?.version ?? 0;
    if (current > PG_SCHEMA_VERSION) {
      throw new Error(`database schema version ${current} is newer than this organism (${PG_SCHEMA_VERSION})`);
    }
    for (let v = current; v < PG_SCHEMA_VERSION; v++) {
      await client.query(PG_MIGRATIONS[v]!);
      await client.query('UPDATE schema_version SET version = $1', [v + 1]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
