import type { LoadedOrganism, OrganismConfig } from '../config/types.js';
import type { ApiToken } from './auth.js';
import type { Organism } from '../organism/organism.js';
import type { Reloader } from './reloader.js';

/**
 * The organism as routes see it: its operations and `queries`, never the storage, the budget
 * ledger or the event bus (an embedder's handles, which stay on Organism).
 */
export type ServiceOrganism = Omit<Organism, 'storage' | 'bus' | 'budgets' | 'llmCalls'>;

/** What every route group gets: the organism and the process-level hooks the CLI supplies. */
export interface ServiceContext {
  readonly organism: ServiceOrganism;
  readonly version: string;
  /** Called after the stop response is sent (the CLI shuts the process down). */
  readonly onStop?: () => void;
  /** Called after the restart response is sent (the CLI drains and restarts). */
  readonly onRestart?: () => void;
  /** Re-reads and validates the configuration file; throws with the reason when it is invalid. */
  readonly reloadConfig?: () => Promise<LoadedOrganism>;
  /**
   * Resolves the API tokens a configuration names (from env); a reload that changes
   * `auth.tokens` applies them. Problems (an unset variable) refuse the reload.
   */
  readonly resolveTokens?: (config: OrganismConfig) => { readonly tokens: readonly ApiToken[]; readonly problems: readonly string[] };
  /** The one reload path (POST /organism/reload, `serve --watch`), one at a time. */
  readonly reloader: Reloader;
}

/** Seconds since the organism started (0 before it has). */
export function uptimeSeconds(organism: ServiceOrganism, now = Date.now()): number {
  const started = organism.startedAt;
  return started === null ? 0 : Math.max(0, Math.round((now - started) / 100) / 10);
}
