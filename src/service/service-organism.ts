import type { Organism } from '../organism/organism.js';

/**
 * The organism as routes see it: its operations and `queries`, never the storage, the budget
 * ledger or the event bus (an embedder's handles, which stay on Organism).
 */
export type ServiceOrganism = Omit<Organism, 'storage' | 'bus' | 'budgets' | 'llmCalls'>;
