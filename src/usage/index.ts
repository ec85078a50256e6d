export * from './types.js';
export * from './pricing.js';
export * from './tracker.js';
export * from './budgets.js';
export * from './ledger.js';
export * from './budget-archive.js';
