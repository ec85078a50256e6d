import type { ListenerConfig, OrganismConfig } from '../config/types.js';

/** What a reload changes beyond the listeners, named by organism.yaml keys. */
export interface ConfigChanges {
  /** Every key whose value differs (`max_tokens_per_thread`, `llm.providers.mock.base_url`, ...). */
  readonly changed: readonly string[];
  /** The changed keys a running process cannot apply: they take effect at the next start. */
  readonly restartRequired: readonly string[];
}

/**
 * Keys read only when the process starts: journal retention and recovery attempts (storage is
 * opened with them), the /metrics route and the trace exporter.
 */
const AT_START = [/^journal\./, /^metrics(\.|$)/, /^telemetry(\.|$)/];

/** Config field names as organism.yaml spells them. */
const YAML_NAMES: Record<string, string> = { mockLatencyMs: 'latency_ms', tokenEnv: 'token_env', handlerRef: 'handler', payloadTypes: 'payload' };
const yamlName = (key: string): string => YAML_NAMES[key] ?? key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Entries of two named lists (providers, tokens): added or removed as a whole, else field by field. */
function namedListChanges<T extends { readonly name: string }>(prefix: string, before: readonly T[], after: readonly T[]): string[] {
  const out: string[] = [];
  const old = new Map(before.map((x) => [x.name, x]));
  const next = new Map(after.map((x) => [x.name, x]));
  for (const [name, item] of next) {
    const prev = old.get(name);
    if (!prev) {
      out.push(`${prefix}.${name}`);
      continue;
    }
    const keys = new Set([...Object.keys(prev), ...Object.keys(item)]);
    for (const key of keys) {
      if (!same((prev as Record<string, unknown>)[key], (item as Record<string, unknown>)[key])) out.push(`${prefix}.${name}.${yamlName(key)}`);
    }
  }
  for (const name of old.keys()) if (!next.has(name)) out.push(`${prefix}.${name}`);
  return out;
}

function recordChanges(prefix: string, before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => !same(before[k], after[k])).map((k) => `${prefix}.${k}`);
}

/** The keys that differ between two configurations (listeners are reported by the listener diff). */
export function configChanges(before: OrganismConfig, after: OrganismConfig): ConfigChanges {
  const changed: string[] = [];
  if (before.name !== after.name) changed.push('organism.name');
  for (const key of ['maxTokensPerThread', 'maxConcurrentHandlers', 'maxConcurrentPerAgent', 'maxHops', 'maxQueue'] as const) {
    if (before[key] !== after[key]) changed.push(yamlName(key));
  }
  changed.push(...namedListChanges('llm.providers', before.llm.providers, after.llm.providers));
  changed.push(...recordChanges('llm.pricing', before.llm.pricing, after.llm.pricing));
  if ((before.llm.record ?? 'full') !== (after.llm.record ?? 'full')) changed.push('llm.record');
  for (const key of ['maxReplyBytes', 'maxMessagesPerReply'] as const) {
    if (before.llm[key] !== after.llm[key]) changed.push(`llm.${yamlName(key)}`);
  }
  changed.push(...namedListChanges('mcp_servers', before.mcpServers ?? [], after.mcpServers ?? []));
  const payloads = (c: OrganismConfig) => Object.fromEntries(c.payloads.map((p) => [p.name, p]));
  changed.push(...recordChanges('payloads', payloads(before), payloads(after)));
  changed.push(...namedListChanges('auth.tokens', before.auth.tokens, after.auth.tokens));
  for (const key of Object.keys({ ...before.journal, ...after.journal }) as Array<keyof OrganismConfig['journal']>) {
    if (before.journal[key] !== after.journal[key]) changed.push(`journal.${yamlName(key)}`);
  }
  if (!same(before.metrics, after.metrics)) changed.push('metrics');
  if (!same(before.telemetry, after.telemetry)) changed.push('telemetry');
  if (!same(before.guards ?? [], after.guards ?? [])) changed.push('guards');
  if (!same(before.privacy ?? null, after.privacy ?? null)) changed.push('privacy');
  changed.push(...namedListChanges('schedules', before.schedules ?? [], after.schedules ?? []));
  changed.push(...namedListChanges('webhooks', before.webhooks ?? [], after.webhooks ?? []));
  return { changed, restartRequired: changed.filter((k) => AT_START.some((re) => re.test(k))) };
}

/**
 * The organism.yaml keys of one listener that differ (`prompt`, `model`, `peers`, ...), in the
 * order organism.yaml lists them; `handler code` when only the code behind the same `handler`
 * changed (a tool's file was edited).
 */
export function listenerFieldChanges(before: ListenerConfig, after: ListenerConfig, codeChanged: boolean): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  // `payload` and `payloadTypes` both come from `payload:`: named once.
  const out = [...new Set([...keys].filter((k) => !same((before as unknown as Record<string, unknown>)[k], (after as unknown as Record<string, unknown>)[k])).map(yamlName))];
  if (codeChanged && !out.includes('handler')) out.push('handler code');
  return out;
}
