/**
 * Checks over the handlers' log of a scale-out run (see cluster.ts), and the crash suite's
 * durability checks (test/crash/checks.ts) fed from it. Each returns what it found wrong, so
 * one run reports every violation.
 */
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { checkDurability, type Violation } from '../crash/checks.js';
import type { EffectsView } from '../crash/effects.js';
import type { RunLine } from './cluster.js';

/** Handlers whose finished run is a side effect: sink, and the chaos workload's ledger (answered asks). */
const EFFECT_LISTENERS = new Set(['sink', 'ledger']);

/**
 * The crash suite's view of the side effects: a handler run of a delivery the journal had
 * ACKED is a violation; the thread's effect is sink's (or ledger's) run finishing, deduplicated
 * by message id.
 */

export function effectsOf(runs: readonly RunLine[]): EffectsView {
  const violations = runs.filter((r) => r.ev === 'start' && r.acked).map((r) => ({ messageId: r.messageId, listener: r.listener }));
  const sinkDone = new Map<string, Set<string>>();
  const runsByMessage = new Map<string, number>();
  for (const r of runs) {
    if (r.ev === 'start') runsByMessage.set(r.messageId, (runsByMessage.get(r.messageId) ?? 0) + 1);
    if (r.ev === 'end' && EFFECT_LISTENERS.has(r.listener)) {
      const set = sinkDone.get(r.threadId) ?? new Set<string>();
      set.add(r.messageId);
      sinkDone.set(r.threadId, set);
    }
  }
  return { violations, effectsByThread: new Map([...sinkDone].map(([t, s]) => [t, s.size])), runsByMessage };
}

/**
 * No delivery was run twice with the same attempt (two processes claimed it at once), and
 * every run of a delivery but its last was cut short by a killed process (`killed` pids):
 * a surviving process never ran a delivery that was then run again.
 */
export function rerunViolations(runs: readonly RunLine[], killed: ReadonlySet<number>): Violation[] {
  const out: Violation[] = [];
  const byMessage = new Map<string, RunLine[]>();
  for (const r of runs) if (r.ev === 'start') byMessage.set(r.messageId, [...(byMessage.get(r.messageId) ?? []), r]);
  for (const [messageId, starts] of byMessage) {
    const attempts = starts.map((s) => s.attempt);
    if (new Set(attempts).size !== attempts.length) {
      out.push({
        check: 'claimed-once',
        detail: `${starts[0]!.listener} delivery ${messageId} ran more than once with the same attempt: ${starts.map((s) => `attempt ${s.attempt} on pid ${s.pid}`).join(', ')}`,
      });
    }
    for (const s of starts.slice(0, -1)) {
      if (!killed.has(s.pid))
        out.push({ check: 'rerun-only-after-kill', detail: `${s.listener} delivery ${messageId} ran on pid ${s.pid} (attempt ${s.attempt}), which was not killed, and ran again after` });
    }
    const sorted = [...attempts].sort((a, b) => a - b);
    if (sorted.join() !== attempts.join())
      out.push({ check: 'attempts-increase', detail: `${starts[0]!.listener} delivery ${messageId} ran with attempts ${attempts.join(', ')} in that order` });
  }
  return out;
}

/** The crash suite's durability checks on the cluster's database (every process stopped first). */
export async function durabilityViolations(
  storeUrl: string,
  runs: readonly RunLine[],
  accepted: ReadonlyArray<{ threadId: string; messageId: string }>,
): Promise<{ violations: Violation[]; failed: number; usageEvents: number; thinkerAcked: number; billingRequests: number }> {
  const storage = await openPostgresStorage({ url: storeUrl });
  try {
    const violations = await checkDurability({
      source: storage,
      effects: effectsOf(runs),
      expectations: accepted.map(({ threadId, messageId }) => ({ threadId, messageId, root: 'ACKED', threadStatus: 'completed', effects: 1 })),
      oneCallAgents: ['thinker'],
      ceiling: () => Number.MAX_SAFE_INTEGER,
    });
    const stats = await storage.journal.stats();
    const thinkerAcked = await storage.journal.list({ agent: 'thinker', state: 'ACKED', limit: 1_000_000, offset: 0 });
    const events = await storage.usage.history({ limit: 1, offset: 0 });
    const billing = await storage.usage.billing({});
    return {
      violations,
      failed: stats.counts.FAILED,
      usageEvents: events.total,
      thinkerAcked: thinkerAcked.items.filter((e) => e.message.to === 'thinker').length,
      billingRequests: billing.requestCount,
    };
  } finally {
    await storage.close();
  }
}

/**
 * Per-thread FIFO from the handlers' log, for threads whose messages were injected one after
 * another (`threads`: thread id -> message ids in inject order): a message starts only once
 * every earlier one of its thread has ended, and never after a later one started. A run may be
 * repeated (a killed or stopped process's delivery taken back); `excused` starts (a run that a
 * process which had lost its lease started late) are left out.
 */
export function fifoViolations(runs: readonly RunLine[], threads: ReadonlyMap<string, readonly string[]>, excused: (r: RunLine) => boolean = () => false): Violation[] {
  const out: Violation[] = [];
  const position = new Map<string, { threadId: string; index: number }>();
  for (const [threadId, ids] of threads) ids.forEach((id, index) => void position.set(id, { threadId, index }));
  const ended = new Map<string, Set<number>>();
  const highestStarted = new Map<string, number>();
  for (const r of runs) {
    const at = position.get(r.messageId);
    if (!at) continue;
    const done = ended.get(at.threadId) ?? new Set<number>();
    ended.set(at.threadId, done);
    if (r.ev === 'end') {
      done.add(at.index);
      continue;
    }
    if (r.ev !== 'start' || excused(r)) continue;
    const waiting = Array.from({ length: at.index }, (_, i) => i).filter((i) => !done.has(i));
    if (waiting.length)
      out.push({ check: 'thread-fifo', detail: `thread ${at.threadId}: message ${at.index} (${r.messageId}) started on pid ${r.pid} before message(s) ${waiting.join(', ')} ended` });
    const highest = highestStarted.get(at.threadId) ?? -1;
    if (highest > at.index)
      out.push({ check: 'thread-fifo', detail: `thread ${at.threadId}: message ${at.index} (${r.messageId}) started on pid ${r.pid} after message ${highest} had started` });
    highestStarted.set(at.threadId, Math.max(highest, at.index));
  }
  return out;
}
