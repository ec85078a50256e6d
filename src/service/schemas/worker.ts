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
    inFlight: Type.Integer({ description: 'Deliveries it ran at its last heartbeat; 0 when it is not alive' }),
    leaseSeconds: Type.Number({ description: 'Silent this long, its deliveries are taken over' }),
  },
  { title: 'WorkerInfo' },
);

export const WorkerListResponse = Type.Object(
  {
    shared: Type.Boolean({ description: 'false: an embedded organism (SQLite or memory), one process, no workers listed' }),
    workers: Type.Array(WorkerInfo),
    count: Type.Integer(),
  },
  { title: 'WorkerListResponse' },
);
