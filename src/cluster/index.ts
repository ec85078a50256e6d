/**
 * Cluster mode: several organism processes on one PostgreSQL database. The claim queue
 * (queue/: claims, leases, lots, fencing), the event bus between processes (bus/: channels,
 * event publisher and receiver, the cluster link) and the `workers` table. It builds on the
 * PostgreSQL store (src/store/postgres), which never imports it but for its opener (storage.ts).
 */
export { channelsFor, channelName, PgListener, type Channels, type ChannelKind } from './bus/channels.js';
export type { WorkerRecord, WorkerIdentity } from './workers.js';
export { DEFAULT_LEASE_MS } from './queue/work-source.js';
