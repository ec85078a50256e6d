export { openPostgresStorage, type PostgresStorage, type PostgresStorageOptions, type ClusterStorage, type ClusterStorageOptions } from './storage.js';
export { PG_MIGRATIONS, PG_SCHEMA_VERSION } from './migrations.js';
export { redactUrl } from './pool.js';
