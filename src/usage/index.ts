export * from './types.js';
export * from './pricing.js';
export * from './tracker.js';
export * from './budgets.js';
export * from '../core/budget.js';
export * from './budget-archive.js';
