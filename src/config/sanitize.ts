import type { FieldType } from '../payload/types.js';
import type { OrganismConfig, ProviderConfig } from './types.js';

const REDACTED = '[redacted]';

/** Shows a field type the way it is written in YAML: `string`, `Item[]`. */
function typeExpr(t: FieldType): string {
  return t.kind === 'list' ? `${typeExpr(t.of)}[]` : t.kind === 'ref' ? t.name : t.kind;
}

/** Drops credentials a base URL might carry (`https://user:pass@host`, `?api_key=...`). */
function sanitizeUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = '';
      u.password = '';
    }
    for (const key of [...u.searchParams.keys()]) u.searchParams.set(key, REDACTED);
    return u.toString();
  } catch {
    return REDACTED;
  }
}

function provider(p: ProviderConfig): Record<string, unknown> {
  return {
    name: p.name,
    type: p.type,
    baseUrl: sanitizeUrl(p.baseUrl),
    apiKeyEnv: p.apiKeyEnv,
    models: [...p.models],
    priority: p.priority,
    timeoutSeconds: p.timeoutSeconds,
    maxRetries: p.maxRetries,
    ...(p.type === 'mock' ? { script: structuredClone(p.script) } : {}),
    ...(p.replyFormat ? { replyFormat: p.replyFormat } : {}),
    ...(p.maxTokensParam ? { maxTokensParam: p.maxTokensParam } : {}),
  };
}

/** Replaces, in every string of a JSON value, any of the given secret values. */
function scrub(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return secrets.reduce((s, secret) => s.split(secret).join(REDACTED), value);
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrub(v, secrets)]));
  }
  return value;
}

/**
 * The config as operators may see it (GET /organism/config): camelCase JSON, env var names
 * only, `${VAR}` substitutions shown expanded. Keys name the variables that hold secrets; a
 * value that a secret variable was substituted into is withheld whole (`[redacted]`); as a
 * second line of defence, the values of the env vars it names are scrubbed from every string,
 * wherever they might have been pasted.
 */
export function sanitizeConfig(config: OrganismConfig, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const view = {
    name: config.name,
    maxTokensPerThread: config.maxTokensPerThread,
    maxConcurrentHandlers: config.maxConcurrentHandlers,
    maxConcurrentPerAgent: config.maxConcurrentPerAgent,
    maxHops: config.maxHops,
    maxQueue: config.maxQueue,
    llm: {
      providers: config.llm.providers.map(provider),
      pricing: structuredClone(config.llm.pricing),
      record: config.llm.record ?? 'full',
      maxReplyBytes: config.llm.maxReplyBytes,
      maxMessagesPerReply: config.llm.maxMessagesPerReply,
    },
    mcpServers: (config.mcpServers ?? []).map((m) => ({
      name: m.name,
      command: m.command ? [...m.command] : null,
      url: sanitizeUrl(m.url),
      tools: m.tools ? [...m.tools] : null,
      timeoutSeconds: m.timeoutSeconds,
    })),
    listeners: config.listeners.map((l) => ({
      name: l.name,
      description: l.description,
      agent: l.agent,
      peers: [...l.peers],
      payload: l.payloadTypes ? [...l.payloadTypes] : l.payload,
      handler: l.handlerRef,
      prompt: l.prompt,
      model: l.model,
      maxOutputTokens: l.maxOutputTokens,
      timeoutSeconds: l.timeoutSeconds,
      replyFormat: l.replyFormat ?? null,
      mcpServers: [...(l.mcpServers ?? [])],
      ...(l.tools ? { tools: l.tools.map((t) => ({ ...t })) } : {}),
      ...(l.approval ? { approval: [...l.approval] } : {}),
      maxToolRounds: l.maxToolRounds ?? null,
      maxToolCallsPerRound: l.maxToolCallsPerRound ?? null,
      maxMessagesPerReply: l.maxMessagesPerReply,
      ...(l.retry ? { retry: { ...l.retry } } : {}),
      ...(l.onError ? { onError: l.onError } : {}),
      ...(l.expose ? { expose: { ...l.expose } } : {}),
      // The token's variable name only (its value is never read here).
      ...(l.remote ? { tokenEnv: l.remote.tokenEnv, maxRetries: l.remote.maxRetries } : {}),
      ...(l.loopGuard ? { loopGuard: { ...l.loopGuard } } : {}),
      ...(l.replay ? { replay: l.replay } : {}),
    })),
    payloads: config.payloads.map((p) => ({
      name: p.name,
      ...(p.description !== undefined ? { description: p.description } : {}),
      fields: p.fields.map((f) => ({
        name: f.name,
        type: typeExpr(f.type),
        optional: f.optional,
        ...(f.description !== undefined ? { description: f.description } : {}),
      })),
    })),
    auth: { tokens: config.auth.tokens.map((t) => ({ name: t.name, role: t.role, tokenEnv: t.tokenEnv })) },
    journal: { ...config.journal },
    ...(config.loopGuard ? { loopGuard: { ...config.loopGuard } } : {}),
    ...(config.schedules
      ? { schedules: config.schedules.map((sc) => Object.fromEntries(Object.entries({ ...sc, payload: structuredClone(sc.payload) }).filter(([, v]) => v !== null))) }
      : {}),
    ...(config.webhooks
      ? {
          webhooks: config.webhooks.map((w) => ({
            name: w.name,
            url: sanitizeUrl(w.url),
            events: [...w.events],
            secretEnv: w.secretEnv,
            timeoutSeconds: w.timeoutSeconds,
            retry: { maxAttempts: w.maxAttempts, initialSeconds: w.initialBackoffSeconds, maxSeconds: w.maxBackoffSeconds },
          })),
        }
      : {}),
    ...(config.metrics ? { metrics: { ...config.metrics } } : {}),
    ...(config.telemetry
      ? {
          telemetry: {
            otlp: config.telemetry.otlp ? { ...config.telemetry.otlp } : null,
            captureContent: config.telemetry.captureContent,
            contextManager: config.telemetry.contextManager,
            traceProbes: config.telemetry.traceProbes,
          },
        }
      : {}),
  };
  const names = [
    ...config.llm.providers.flatMap((p) => (p.apiKeyEnv ? [p.apiKeyEnv] : [])),
    ...config.auth.tokens.map((t) => t.tokenEnv),
    ...(config.webhooks ?? []).map((w) => w.secretEnv),
    'ORGANISM_API_TOKEN',
  ];
  // Very short values would scrub ordinary words; real keys and tokens are long.
  const secrets = names.map((n) => env[n]).filter((v): v is string => typeof v === 'string' && v.length >= 8);
  // A value that a secret was substituted into (`${GITHUB_TOKEN}`) is not shown at all, whatever the secret's length.
  const substituted = (config.secretVariables ?? []).map((n) => env[n]).filter((v): v is string => typeof v === 'string' && v !== '');
  return scrub(withheld(view, substituted), secrets) as Record<string, unknown>;
}

/** Replaces every string of a JSON value that holds one of the given secret values by `[redacted]`. */
function withheld(value: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return secrets.some((secret) => value.includes(secret)) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((v) => withheld(v, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withheld(v, secrets)]));
  }
  return value;
}
