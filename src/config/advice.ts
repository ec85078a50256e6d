import { BACKOFF_BASE_MS, BACKOFF_CAP_MS } from '../llm/retry.js';
import { providerServes, type ConfigDraft, type Located } from './document.js';
import { ConfigMessages } from './messages.js';
import type { ProblemSink } from './reader.js';
import { Defaults } from './schema.js';
import type { ListenerConfig, ProviderConfig } from './types.js';

/**
 * Checks of a valid config that do not stop it loading: timeouts that defeat failover and
 * environment variables that are unset. `check` prints them as warnings; the provider keys an
 * agent needs are also what `serve` and `run` refuse to start without.
 */

/** The providers one LLM call of `model` may go through, in the router's order (stable by priority). */
export function failoverChain<T extends { value: ProviderConfig }>(providers: readonly T[], model: string): T[] {
  return providers.filter((p) => providerServes(p.value, model)).sort((a, b) => a.value.priority - b.value.priority);
}

/** Worst-case backoff between a provider's attempts (full jitter: at most the ceiling each time), in seconds. */
function backoffSeconds(maxRetries: number): number {
  let ms = 0;
  for (let attempt = 1; attempt <= maxRetries; attempt++) ms += Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return ms / 1000;
}

/** How long a provider may hold one call before the next one is tried: every attempt timing out, plus backoff. */
export function providerWorstSeconds(p: ProviderConfig): number {
  return p.timeoutSeconds * (p.maxRetries + 1) + backoffSeconds(p.maxRetries);
}

/**
 * The default `timeout_seconds` of a listener that calls a model: long enough for one call to
 * go through every provider serving it (all attempts, backoff included), plus the listener
 * default for the rest of the delivery. A listener without a model gets the plain default.
 */
export function derivedListenerTimeout(providers: readonly ProviderConfig[], model: string | null): number {
  if (model === null) return Defaults.listenerTimeoutSeconds;
  const chain = failoverChain(
    providers.map((value) => ({ value })),
    model,
  );
  if (chain.length === 0) return Defaults.listenerTimeoutSeconds;
  return Math.ceil(chain.reduce((s, p) => s + providerWorstSeconds(p.value), 0)) + Defaults.listenerTimeoutSeconds;
}

/**
 * A listener whose own `timeout_seconds` ends its delivery before its providers' attempts are
 * over: the last provider of its chain (the backup) is never tried, or the retries never end.
 */
export function timeoutWarnings(warnings: ProblemSink, draft: ConfigDraft, explicitTimeout: ReadonlySet<Located<ListenerConfig>>): void {
  for (const l of draft.listeners) {
    if (!explicitTimeout.has(l) || l.value.model === null) continue;
    const chain = failoverChain(draft.providers, l.value.model);
    if (chain.length === 0) continue;
    const needed = chain.reduce((s, p) => s + providerWorstSeconds(p.value), 0);
    if (l.value.timeoutSeconds > needed) continue;
    // The providers that may use up the listener's time, and the first one never reached.
    let elapsed = 0;
    let starved: string | null = null;
    for (const p of chain) {
      if (elapsed >= l.value.timeoutSeconds) {
        starved = p.value.name;
        break;
      }
      elapsed += providerWorstSeconds(p.value);
    }
    const described = chain.map((p) => ({
      name: p.value.name,
      keyPath: p.at.path,
      line: warnings.lineOf(p.at.node),
      timeout: p.value.timeoutSeconds,
      attempts: p.value.maxRetries + 1,
      worst: providerWorstSeconds(p.value),
    }));
    warnings.add(
      l.at.nodeFor('timeout_seconds'),
      l.at.pathOf('timeout_seconds'),
      ConfigMessages.timeoutDefeatsFailover(l.value.name, l.value.timeoutSeconds, described, starved, Math.ceil(needed) + 1),
    );
  }
}

/** Where an env var is used, for the warning and for the refusal. */
interface EnvUse {
  readonly variable: string;
  readonly at: { readonly node: Parameters<ProblemSink['add']>[0]; readonly path: string };
  readonly what: string;
  /** serve refuses to start while it is unset. */
  readonly refused: boolean;
}

/** Providers that some listener's model needs (the router would call them). */
export function providersInUse(draft: ConfigDraft): Map<Located<ProviderConfig>, string[]> {
  const used = new Map<Located<ProviderConfig>, string[]>();
  for (const l of draft.listeners) {
    if (l.value.model === null) continue;
    for (const p of failoverChain(draft.providers, l.value.model)) used.set(p, [...(used.get(p) ?? []), l.value.name]);
  }
  return used;
}

/** Every `api_key_env` and `token_env` whose variable is unset or empty in `env`. */
export function unsetEnvWarnings(warnings: ProblemSink, draft: ConfigDraft, env: NodeJS.ProcessEnv): void {
  const used = providersInUse(draft);
  const uses: EnvUse[] = [];
  for (const p of draft.providers) {
    if (p.value.apiKeyEnv === null || p.value.type === 'mock') continue;
    const agents = used.get(p) ?? [];
    uses.push({
      variable: p.value.apiKeyEnv,
      at: { node: p.at.nodeFor('api_key_env'), path: p.at.pathOf('api_key_env') },
      what: ConfigMessages.providerKeyUse(p.value.name, agents),
      refused: agents.length > 0,
    });
  }
  for (const t of draft.tokens) {
    uses.push({
      variable: t.value.tokenEnv,
      at: { node: t.at.nodeFor('token_env'), path: t.at.pathOf('token_env') },
      what: ConfigMessages.tokenUse(t.value.name, t.value.role),
      refused: true,
    });
  }
  for (const u of uses) {
    if (u.variable !== '' && !env[u.variable]) warnings.add(u.at.node, u.at.path, ConfigMessages.envUnset(u.variable, u.what, u.refused));
  }
  // A remote A2A agent's token is read at each call: unset, its deliveries fail (serve starts all the same).
  for (const l of draft.listeners) {
    const variable = l.value.remote?.tokenEnv;
    if (variable && !env[variable]) warnings.add(l.at.nodeFor('token_env'), l.at.pathOf('token_env'), ConfigMessages.remoteTokenUnset(variable, l.value.name));
  }
  for (const w of draft.webhooks) {
    const variable = w.value.secretEnv;
    if (variable !== '' && !env[variable]) warnings.add(w.at.nodeFor('secret_env'), w.at.pathOf('secret_env'), ConfigMessages.webhookSecretUnset(variable, w.value.name));
  }
}

/** The problems that keep `serve`/`run` from starting: a provider an agent calls whose key is unset. */
export function missingProviderKeys(problems: ProblemSink, draft: ConfigDraft, env: NodeJS.ProcessEnv): void {
  for (const [p, agents] of providersInUse(draft)) {
    const variable = p.value.apiKeyEnv;
    if (variable === null || p.value.type === 'mock' || env[variable]) continue;
    problems.add(p.at.nodeFor('api_key_env'), p.at.pathOf('api_key_env'), ConfigMessages.providerKeyUnset(p.value.name, variable, agents));
  }
}
