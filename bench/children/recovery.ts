/**
 * Scenario 5, preparation in a fresh process: a journal with `rows` entries of which
 * `pending` are PENDING, built from real traffic. A real Organism (the 3-hop chain the
 * scenario serves) runs 1,000 messages through, so every column holds what the runtime
 * writes; those rows and their threads are then copied by SQL (new ids, same shapes) up to the
 * requested size. The newest `pending` threads are turned back into undelivered injections:
 * their first-hop entry PENDING, their later hops removed, the thread active again.
 */
import Database from 'better-sqlite3';
import path from 'node:path';
import { Organism } from '../../src/organism/organism.js';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';
import { RECOUNT_JOURNAL_SQL } from '../../src/store/sqlite/journal-counts.js';
import { childMain } from '../lib/child.js';
import { ackCounter, pushThrough } from '../lib/drive.js';
import { chainOrganism } from '../lib/organisms.js';

export interface RecoveryPrepareInput {
  readonly dataDir: string;
  readonly rows: number;
  readonly pending: number;
}

export interface RecoveryPrepareResult {
  readonly rows: number;
  readonly pending: number;
  readonly threads: number;
  readonly dbBytes: number;
  readonly prepareSec: number;
  /** A fresh connection: open the database and run recovery's SELECT of the PENDING rows (ms). */
  readonly rawSelectMs: number;
}

const SEED = 1_000;
const HOPS = 3;

async function prepare(input: RecoveryPrepareInput): Promise<RecoveryPrepareResult> {
  const t0 = performance.now();
  const organism = new Organism(chainOrganism(HOPS), { storage: openSqliteStorage({ dataDir: input.dataDir }) });
  await organism.start();
  const acked = ackCounter(organism, `hop${HOPS}`);
  await pushThrough(organism, 'hop1', SEED, () => acked.count, SEED, 120_000);
  acked.off();
  await organism.stop();

  const db = new Database(path.join(input.dataDir, DATABASE_FILE));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF'); // preparation only; the server reopens with its own settings
  db.pragma('cache_size = -524288');
  const seedRows = (db.prepare('SELECT COUNT(*) AS n FROM journal').get() as { n: number }).n;
  if (seedRows !== SEED * HOPS) throw new Error(`expected ${SEED * HOPS} seed rows, found ${seedRows}`);
  // Removing the later hops of the pending threads takes (HOPS - 1) rows each: copy that many more.
  const target = input.rows + input.pending * (HOPS - 1);
  const copies = Math.ceil((target - seedRows) / seedRows);
  const copyJournal = db.prepare(`WITH RECURSIVE c(k) AS (SELECT @from UNION ALL SELECT k + 1 FROM c WHERE k + 1 < @to)
    INSERT INTO journal (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, state,
      attempts, created_at, dispatched_at, acked_at, failed_at, failure_reason, error)
    SELECT j.id || '-' || c.k, j.thread_id || '-' || c.k, j.sender, j.recipient, j.payload_type, j.payload, j.metadata, j.hops,
      CASE WHEN j.parent_id IS NULL THEN NULL ELSE j.parent_id || '-' || c.k END, j.msg_timestamp, j.attempt, j.state,
      j.attempts, j.created_at, j.dispatched_at, j.acked_at, j.failed_at, j.failure_reason, j.error
    FROM c CROSS JOIN (SELECT * FROM journal WHERE seq <= @seedMax ORDER BY seq) j`);
  db.exec('CREATE TEMP TABLE seed_threads AS SELECT * FROM threads');
  const copyThreads = db.prepare(`WITH RECURSIVE c(k) AS (SELECT @from UNION ALL SELECT k + 1 FROM c WHERE k + 1 < @to)
    INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata)
    SELECT t.id || '-' || c.k, t.status, t.participants, t.message_count, t.created_at, t.last_activity, t.error, t.metadata
    FROM c CROSS JOIN seed_threads t`);
  const seedMax = (db.prepare('SELECT MAX(seq) AS m FROM journal').get() as { m: number }).m;
  const CHUNK = 100;
  for (let from = 1; from <= copies; from += CHUNK) {
    const to = Math.min(copies + 1, from + CHUNK);
    db.transaction(() => {
      copyJournal.run({ from, to, seedMax });
      copyThreads.run({ from, to });
    })();
  }
  db.transaction(() => {
    // Trim to the target size (the newest copies go), then turn the newest threads back into undelivered work.
    db.prepare('DELETE FROM journal WHERE seq > (SELECT seq FROM journal ORDER BY seq LIMIT 1 OFFSET ?)').run(target - 1);
    db.exec(`DELETE FROM threads WHERE id NOT IN (SELECT DISTINCT thread_id FROM journal)`);
    db.exec(`CREATE TEMP TABLE picked AS SELECT thread_id FROM journal WHERE recipient = 'hop1' ORDER BY seq DESC LIMIT ${input.pending}`);
    db.exec(`DELETE FROM journal WHERE thread_id IN (SELECT thread_id FROM picked) AND recipient <> 'hop1'`);
    db.exec(`UPDATE journal SET state = 'PENDING', attempts = 0, dispatched_at = NULL, acked_at = NULL WHERE thread_id IN (SELECT thread_id FROM picked)`);
    // INDEXED BY: left to itself the planner walks journal_recipient (every hop1 row) once per thread.
    db.exec(`UPDATE threads SET status = 'active', message_count = 1, participants = (SELECT json_array(j.sender, j.recipient) FROM journal j INDEXED BY journal_thread WHERE j.thread_id = threads.id AND j.recipient = 'hop1')
      WHERE id IN (SELECT thread_id FROM picked)`);
  })();
  db.exec(RECOUNT_JOURNAL_SQL); // rows were copied around the store, so its counts are redone as its migration does
  const rows = (db.prepare('SELECT COUNT(*) AS n FROM journal').get() as { n: number }).n;
  const pending = (db.prepare(`SELECT COUNT(*) AS n FROM journal WHERE state = 'PENDING'`).get() as { n: number }).n;
  const threads = (db.prepare('SELECT COUNT(*) AS n FROM threads').get() as { n: number }).n;
  db.pragma('wal_checkpoint(TRUNCATE)');
  const pageCount = db.pragma('page_count', { simple: true }) as number;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const prepareSec = (performance.now() - t0) / 1000;
  // The floor of recovery: a new connection reading what recover() reads (same query, WAL mode).
  const r0 = performance.now();
  const raw = new Database(path.join(input.dataDir, DATABASE_FILE), { readonly: true });
  const found = raw.prepare(`SELECT * FROM journal WHERE state = 'PENDING' ORDER BY seq`).all().length;
  raw.close();
  const rawSelectMs = performance.now() - r0;
  if (found !== pending) throw new Error(`raw SELECT found ${found} PENDING rows, expected ${pending}`);
  return { rows, pending, threads, dbBytes: pageCount * pageSize, prepareSec, rawSelectMs };
}

childMain<RecoveryPrepareInput, RecoveryPrepareResult>(prepare);
