/**
 * Code handlers of the chaos workload, loaded by every process that runs handlers (`serve`'s
 * worker on SQLite; the `organism worker` processes in cluster mode). Each run is recorded with
 * whether the journal already had the delivery ACKED when the handler started; sink's and
 * ledger's side effects are deduplicated by ctx.messageId.
 *
 * - SQLite (CHAOS_EFFECTS_DB, CHAOS_DATA_DIR): the crash tests' effect log, the journal read
 *   from the organism's own database file.
 * - PostgreSQL (CHAOS_RUNS_FILE, CHAOS_STORE_URL): one JSON line per event appended to a file
 *   (the format of test/scaleout/cluster.ts, read by its checks), with the process's pid, so
 *   reruns and per-thread order can be judged across workers; the journal read from the database.
 */
import Database from 'better-sqlite3';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
// Types only: loading the whole package again for a one-line helper would slow every boot.
import type { Handler, HandlerContext, Outgoing } from 'organism';
import { EffectLog } from '../../test/crash/effects.js';

/** The handlers whose run ends in a side effect (sink's result, ledger's recorded answer). */
const EFFECT_LISTENERS = new Set(['sink', 'ledger']);

interface Recorder {
  start(listener: string, ctx: HandlerContext, seq?: number): Promise<void>;
  end(listener: string, ctx: HandlerContext, seq?: number): void;
}

function sqliteRecorder(effectsFile: string, dataDir: string): Recorder {
  const effects = new EffectLog(effectsFile);
  let journal: Database.Statement | null = null;
  /** The journal's state of a delivery, read-only from the organism's own database. */
  const stateOf = (messageId: string): string | undefined => {
    journal ??= new Database(path.join(dataDir, 'organism.db'), { readonly: true, fileMustExist: true }).prepare('SELECT state FROM journal WHERE id = ?');
    return (journal.get(messageId) as { state: string } | undefined)?.state;
  };
  return {
    async start(listener, ctx) {
      effects.run(listener, ctx.messageId, ctx.attempt, stateOf(ctx.messageId) === 'ACKED');
    },
    end(listener, ctx) {
      if (EFFECT_LISTENERS.has(listener)) effects.applyEffect(ctx.messageId, ctx.threadId);
    },
  };
}

function postgresRecorder(runsFile: string, storeUrl: string): Recorder {
  let pool: pg.Pool | null = null;
  const stateOf = async (id: string): Promise<string | null> => {
    if (!pool) {
      pool = new pg.Pool({ connectionString: storeUrl, max: 2 });
      pool.on('error', () => undefined); // an idle connection ended by a database restart
    }
    // The database may be restarting (a chaos phase): the check waits for it, as the handler's
    // external system would.
    for (let tries = 0; ; tries++) {
      try {
        const r = await pool.query<{ state: string }>('SELECT state FROM journal WHERE id = $1', [id]);
        return r.rows[0]?.state ?? null;
      } catch (err) {
        if (tries >= 300) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  // One write per line with O_APPEND: lines of different processes never interleave.
  const line = (ev: string, listener: string, ctx: HandlerContext, extra: Record<string, unknown>) =>
    appendFileSync(runsFile, `${JSON.stringify({ ev, listener, messageId: ctx.messageId, threadId: ctx.threadId, attempt: ctx.attempt, pid: process.pid, t: Date.now(), ...extra })}\n`);
  return {
    async start(listener, ctx, seq) {
      const acked = (await stateOf(ctx.messageId)) === 'ACKED';
      line('start', listener, ctx, { acked, ...(seq !== undefined ? { seq } : {}) });
    },
    end(listener, ctx, seq) {
      line('end', listener, ctx, seq !== undefined ? { seq } : {});
    },
  };
}

function recorder(): Recorder {
  const env = process.env;
  if (env['CHAOS_RUNS_FILE'] && env['CHAOS_STORE_URL']) return postgresRecorder(env['CHAOS_RUNS_FILE'], env['CHAOS_STORE_URL']);
  if (env['CHAOS_EFFECTS_DB'] && env['CHAOS_DATA_DIR']) return sqliteRecorder(env['CHAOS_EFFECTS_DB'], env['CHAOS_DATA_DIR']);
  throw new Error('chaos handlers need CHAOS_EFFECTS_DB and CHAOS_DATA_DIR (SQLite), or CHAOS_RUNS_FILE and CHAOS_STORE_URL (PostgreSQL)');
}

const record = recorder();
const send = (to: string, payload: Record<string, unknown>): Outgoing => ({ to, payload });
const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 3));

export const intake: Handler = async (payload, ctx) => {
  await record.start('intake', ctx);
  await jitter();
  const text = String(payload['text']);
  const mode = payload['mode'];
  if (mode === 'fail') throw new Error('planned failure of the chaos workload');
  record.end('intake', ctx);
  if (mode === 'ask') return send('desk', { text });
  return send(mode === 'budget' ? 'ping' : mode === 'hostile' ? 'critic' : 'thinker', { text });
};

export const sink: Handler = async (_payload, ctx) => {
  await record.start('sink', ctx);
  await jitter();
  record.end('sink', ctx);
};

/** Messages injected one after another into one thread: their order is checked (cluster mode). */
export const ordered: Handler = async (payload, ctx) => {
  const seq = Number(payload['seq']);
  await record.start('ordered', ctx, seq);
  await new Promise((r) => setTimeout(r, Number(payload['ms'])));
  record.end('ordered', ctx, seq);
};

/** The continuation of an answered ask: the person's Verdict, recorded once per delivery. */
export const ledger: Handler = async (_payload, ctx) => {
  await record.start('ledger', ctx);
  await jitter();
  record.end('ledger', ctx);
};
