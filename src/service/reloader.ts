import { ConfigInvalidError, formatConfigProblem, loadOrganismToRun } from '../config/index.js';
import { fingerprint } from '../config/fingerprint.js';
import type { LoadedOrganism } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { ReloadResult } from '../events/types.js';
import type { ApiToken } from './auth.js';
import type { ServiceOrganism } from './service-organism.js';
import type { OrganismConfig } from '../config/types.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The reload of POST /organism/reload, for the serving process's own use (`serve --watch`). */
    reloadOrganism(options?: ReloadOptions): Promise<ReloadOutcome>;
  }
}

export interface ReloadOptions {
  /** Only report what would change. */
  readonly dryRun?: boolean;
  /** Apply only when the file changes something (a file saved unchanged is not a reload). */
  readonly whenChanged?: boolean;
}

export interface ReloadOutcome {
  /** What changed (applied), or would change (dry run, or nothing to apply). */
  readonly result: ReloadResult;
  readonly applied: boolean;
  /** The configuration read. */
  readonly loaded: LoadedOrganism;
}

/** True when a reload plan changes nothing. */
export function changesNothing(plan: ReloadResult): boolean {
  return plan.added.length === 0 && plan.removed.length === 0 && plan.updated.length === 0 && plan.changed.length === 0;
}

/** What a reload reads: the running organism and the CLI's hooks (see ServiceContext). */
export interface ReloadSources {
  readonly organism: ServiceOrganism;
  /** Re-reads and validates the configuration file; throws with the reason when it is invalid. */
  readonly reloadConfig?: () => Promise<LoadedOrganism>;
  /**
   * Resolves the API tokens a configuration names (from env); a reload that changes
   * `auth.tokens` applies them. Problems (an unset variable) refuse the reload.
   */
  readonly resolveTokens?: (config: OrganismConfig) => { readonly tokens: readonly ApiToken[]; readonly problems: readonly string[] };
}

/**
 * Re-reads organism.yaml and the handler modules, plans the change and applies it: the one
 * reload path of POST /organism/reload and of `serve --watch`, one reload at a time (two
 * concurrent diffs against the same state would race). Failures are the route's errors:
 * RELOAD_INVALID with every problem (nothing applied), RELOAD_FAILED for a fault.
 */
export class Reloader {
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: ReloadSources,
    private readonly setAuthTokens: (tokens: readonly ApiToken[]) => void,
  ) {}

  run(options: ReloadOptions = {}): Promise<ReloadOutcome> {
    const run = this.running.then(() => this.reload(options));
    this.running = run.catch(() => undefined);
    return run;
  }

  private async reload(options: ReloadOptions): Promise<ReloadOutcome> {
    const { organism, resolveTokens } = this.ctx;
    const loaded = await this.read();
    const plan = organism.planReload(loaded);
    // Tokens are checked before anything is applied: an unset variable refuses the whole reload.
    const tokens = plan.changed.some((k) => k.startsWith('auth.tokens')) && resolveTokens ? resolveTokens(loaded.config) : null;
    if (tokens && tokens.problems.length > 0) {
      const problems = tokens.problems.map((message) => ({ location: 'config', field: 'auth.tokens', message }));
      throw Errors.RELOAD_INVALID.withData(problems, `Configuration is invalid: ${tokens.problems.join('; ')}`);
    }
    // Nothing to apply: no listener or key differs, and the configuration is the running one
    // to the last default (a key the plan does not name is never taken for no change).
    const unchanged = () => changesNothing(plan) && fingerprint(loaded.config).hash === organism.configIdentity.hash;
    if (options.dryRun || (options.whenChanged && unchanged())) return { result: plan, applied: false, loaded };
    let result: ReloadResult;
    try {
      result = organism.reload(loaded);
      if (tokens) this.setAuthTokens(tokens.tokens);
    } catch (err) {
      throw reloadError(err);
    }
    // The other processes of a clustered organism follow (nothing to do alone); a database
    // that refuses is its own error (a storage fault), not a bad configuration.
    await organism.shareReload();
    return { result, applied: true, loaded };
  }

  /** Loads the configuration again; a failure is the reload's 500 with the loader's text. */
  private async read(): Promise<LoadedOrganism> {
    try {
      if (this.ctx.reloadConfig) return await this.ctx.reloadConfig();
      const path = this.ctx.organism.configPath;
      if (!path) throw Errors.RELOAD_NO_SOURCE();
      return await loadOrganismToRun(path);
    } catch (err) {
      throw reloadError(err);
    }
  }
}

function reloadError(err: unknown): OrganismError {
  if (err instanceof ConfigInvalidError) {
    // Every problem, file and line included (500 as the spec asks; the dry run answers 422).
    const problems = err.problems.map((p) => ({ location: 'config', field: p.keyPath, message: formatConfigProblem(p) }));
    return Errors.RELOAD_INVALID.withData(problems, err.detail);
  }
  if (err instanceof OrganismError && err.status === 500) return err;
  const text = err instanceof Error ? err.message : typeof err === 'string' ? err : '';
  return text ? Errors.RELOAD_FAILED(text) : Errors.RELOAD_FAILED_DEFAULT();
}
