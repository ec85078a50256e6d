export * from './types.js';
export { MemoryJournal } from './memory/journal.js';
export { MemoryThreadStore } from './memory/threads.js';
export { MemoryUsageStore } from './memory/usage.js';
export { utcDay, dayRange } from './usage-days.js';
export { openSqliteStorage, storageError, DATABASE_FILE, type SqliteStorage, type SqliteStorageOptions } from './sqlite/storage.js';
export { SqliteJournal } from './sqlite/journal.js';
export { SqliteThreadStore } from './sqlite/threads.js';
export { SqliteUsageStore } from './sqlite/usage.js';
