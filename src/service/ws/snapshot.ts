import type { ServiceOrganism } from '../context.js';
import { isoOrNull } from '../time.js';
import { listenerView, journalStatsView, threadView } from '../views.js';

/** Threads in a snapshot: the newest (by activity) first. */
export const SNAPSHOT_THREADS = 100;

/**
 * The body of a `connected` frame on /ws: everything a dashboard needs to draw the current
 * state, after which events keep it current.
 */
export async function snapshotBody(organism: ServiceOrganism, version: string | null): Promise<Record<string, unknown>> {
  // Listeners as the whole organism runs them (in cluster mode, queue depth and in flight from the store, as /api/v1/agents).
  const [threads, stats, listeners, activeThreads, inbox] = await Promise.all([
    organism.queries.threads.list({ limit: SNAPSHOT_THREADS, offset: 0 }),
    organism.queries.journal.stats(),
    organism.liveAgents(),
    organism.activeThreadTotal(),
    organism.inbox.counts(),
  ]);
  const startedAt = organism.startedAt;
  return {
    bootId: organism.bootId,
    organism: {
      name: organism.name,
      status: organism.status,
      version,
      startedAt: isoOrNull(startedAt),
      uptimeSeconds: startedAt === null ? 0 : Math.max(0, Math.floor((Date.now() - startedAt) / 1000)),
      agentCount: listeners.length,
      activeThreads,
      totalMessages: organism.totalMessages,
    },
    agents: listeners.map(listenerView),
    // A held thread is stored active or waiting: shown held, as GET /threads shows it.
    threads: (await organism.holds.views(threads.items)).map(threadView),
    usage: organism.tracker.totals(),
    journal: journalStatsView({ ...stats, lastRecovery: organism.lastRecovery ?? stats.lastRecovery }),
    inbox,
  };
}
