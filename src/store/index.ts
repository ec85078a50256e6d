export * from './types.js';
export { MemoryJournal } from './memory/journal.js';
export { MemoryThreadStore } from './memory/threads.js';
export { MemoryUsageStore } from './memory/usage.js';
export { utcDay, dayRange } from './usage-days.js';
