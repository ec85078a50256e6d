import type { ProcessList, WorkerRecord } from '../core/work-source.js';
import type { OrganismEvent, WorkerChange } from '../events/types.js';
import type { Logger } from '../util/logger.js';

/** The table is read at most this often, and at least this often (a third of the shortest lease in between). */
const MIN_INTERVAL_MS = 250;
const MAX_INTERVAL_MS = 5_000;

/**
 * Tells live views when a process of the organism comes, stops or is lost: it reads the
 * processes' list (the `workers` table in a cluster) every third of the shortest lease and
 * emits a `worker` event for each change since the last read. A process is lost when it is
 * neither alive nor stopped: its heartbeat is older than its lease (killed, frozen, cut off),
 * so its deliveries are taken back. The first read is the baseline: nothing is told of it.
 * Embedded, the list is this process alone and never changes.
 */
export class WorkerWatch {
  private known: Map<string, WorkerRecord> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly list: () => Promise<ProcessList>,
    private readonly emit: (event: OrganismEvent) => void,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Reads the list once and tells what changed since the last read. */
  async check(): Promise<void> {
    const { processes } = await this.list();
    const before = this.known;
    this.known = new Map(processes.map((p) => [p.id, p]));
    if (before === null) return;
    for (const p of processes) {
      const was = before.get(p.id);
      const change = changeOf(was, p);
      if (change) this.emit({ type: 'worker', change, worker: p });
    }
  }

  private async tick(): Promise<void> {
    try {
      await this.check();
      if (this.failing) this.logger.info('reading the processes of the organism works again');
      this.failing = false;
    } catch (err) {
      // An unreachable store is told by the store itself; anything else once until it works again.
      if (!this.failing) this.logger.debug({ err }, 'reading the processes of the organism failed; retrying');
      this.failing = true;
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), this.interval());
    this.timer.unref();
  }

  private interval(): number {
    let lease = Infinity;
    for (const p of this.known?.values() ?? []) if (p.alive && p.leaseMs !== null) lease = Math.min(lease, p.leaseMs);
    return Math.max(MIN_INTERVAL_MS, Math.min(MAX_INTERVAL_MS, lease / 3));
  }
}

function changeOf(was: WorkerRecord | undefined, now: WorkerRecord): WorkerChange | null {
  if (!was) return now.alive ? 'joined' : null;
  if (was.alive && !now.alive) return now.stoppedAt !== null ? 'stopped' : 'lost';
  if (!was.alive && now.alive) return 'back'; // it heartbeats again after its lease lapsed (its claims were taken back meanwhile)
  if (was.stoppedAt === null && now.stoppedAt !== null && !was.alive) return 'stopped';
  return null;
}
