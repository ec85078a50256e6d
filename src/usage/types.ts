export type { UsageEvent, UsageSubscriber } from '../core/usage.js';
