/**
 * Code handlers of the chaos workload, loaded by `organism serve` in its worker. Every run is
 * logged to the effect log of the crash tests (CHAOS_EFFECTS_DB, outside the data directory),
 * with a violation when the journal (read from CHAOS_DATA_DIR) already had it ACKED; sink's
 * side effect is deduplicated by ctx.messageId.
 */
import Database from 'better-sqlite3';
import path from 'node:path';
// Types only: loading the whole package again for a one-line helper would slow every boot.
import type { Handler, Outgoing } from 'organism';
import { EffectLog } from '../../test/crash/effects.js';

const effectsFile = process.env['CHAOS_EFFECTS_DB'];
const dataDir = process.env['CHAOS_DATA_DIR'];
if (!effectsFile || !dataDir) throw new Error('chaos handlers need CHAOS_EFFECTS_DB and CHAOS_DATA_DIR');

const effects = new EffectLog(effectsFile);
let journal: Database.Statement | null = null;

/** The journal's state of a delivery, read-only from the organism's own database. */
function stateOf(messageId: string): string | undefined {
  journal ??= new Database(path.join(dataDir!, 'organism.db'), { readonly: true, fileMustExist: true }).prepare('SELECT state FROM journal WHERE id = ?');
  return (journal.get(messageId) as { state: string } | undefined)?.state;
}

const send = (to: string, payload: Record<string, unknown>): Outgoing => ({ to, payload });
const jitter = () => new Promise((r) => setTimeout(r, Math.random() * 3));

export const intake: Handler = async (payload, ctx) => {
  effects.run('intake', ctx.messageId, ctx.attempt, stateOf(ctx.messageId) === 'ACKED');
  await jitter();
  const text = String(payload['text']);
  switch (payload['mode']) {
    case 'fail':
      throw new Error('planned failure of the chaos workload');
    case 'budget':
      return send('ping', { text });
    case 'hostile':
      return send('critic', { text });
    default:
      return send('thinker', { text });
  }
};

export const sink: Handler = async (_payload, ctx) => {
  effects.run('sink', ctx.messageId, ctx.attempt, stateOf(ctx.messageId) === 'ACKED');
  await jitter();
  effects.applyEffect(ctx.messageId, ctx.threadId);
};
