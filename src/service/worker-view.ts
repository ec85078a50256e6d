import type { WorkerRecord } from '../core/work-source.js';
import { iso, isoOrNull } from './time.js';

/** A process of the organism on the wire (GET /workers, the `worker` frame). */
export function workerView(w: WorkerRecord) {
  return {
    id: w.id,
    kind: w.kind,
    name: w.name,
    host: w.host,
    pid: w.pid,
    handlers: w.handlers,
    configHash: w.configHash,
    startedAt: iso(w.startedAt),
    lastHeartbeat: iso(w.heartbeatAt),
    stoppedAt: isoOrNull(w.stoppedAt),
    alive: w.alive,
    concurrency: w.concurrency,
    inFlight: w.inFlight,
    leaseSeconds: w.leaseMs === null ? null : w.leaseMs / 1000,
  };
}
