export { openPostgresStorage, type PostgresStorage, type PostgresStorageOptions, type SharedStorage, type SharedStorageOptions } from './storage.js';
export { PG_MIGRATIONS, PG_SCHEMA_VERSION } from './migrations.js';
export { redactUrl } from './pool.js';
export { channelsFor, channelName, PgListener, type Channels, type ChannelKind } from './channels.js';
export type { WorkerRecord, WorkerIdentity } from './workers.js';
export { DEFAULT_LEASE_MS } from './work-source.js';
