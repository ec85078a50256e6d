import { Type } from 'typebox';
import { Nullable, NullableTimestamp, Timestamp } from './common.js';

export const WorkerInfo = Type.Object(
  {
    id: Type.String({ description: "The process's id in the organism's database (a new one at each start)" }),
    kind: Type.Enum(['serve', 'worker'], { description: 'serve: the control API (handlers on or off); worker: handlers only' }),
    name: Type.String({ description: '--name, else host:pid' }),
    host: Type.String(),
    pid: Type.Integer(),
    handlers: Type.Boolean({ description: 'Whether it runs handlers (claims deliveries)' }),
    configHash: Type.String({ description: 'The organism.yaml it runs (a hash of the loaded configuration)' }),
    startedAt: Timestamp,
    lastHeartbeat: Timestamp,
    stoppedAt: NullableTimestamp,
    alive: Type.Boolean({ description: 'Heartbeating within its lease and not stopped' }),
    concurrency: Nullable(Type.Integer({ description: '--concurrency; null: limits.max_concurrent_handlers' })),
    inFlight: Type.Integer({
      description: 'Alive: deliveries it ran at its last heartbeat (embedded: now). Not alive: the claims it still holds in the database, 0 once they were taken back',
    }),
    leaseSeconds: Nullable(Type.Number({ description: 'Silent this long, its deliveries are taken over; null: embedded, no lease' })),
  },
  { title: 'WorkerInfo' },
);

export const WorkerListResponse = Type.Object(
  {
    shared: Type.Boolean({ description: 'false: an embedded organism (SQLite, memory, PostgreSQL --exclusive): its one process is listed, kind serve' }),
    workers: Type.Array(WorkerInfo),
    count: Type.Integer(),
  },
  { title: 'WorkerListResponse' },
);
