import type { ListenerConfig, LoadedOrganism, OrganismConfig, ResolvedListener } from '../../src/config/types.js';
import { ConfigDefaults, loadOrganism } from '../../src/config/index.js';
import { DEMO_CONFIG } from '../../src/cli/config-path.js';
import { definePayload } from '../../src/payload/define.js';
import { send, type Handler } from '../../src/core/handler.js';

/** Organisms the scenarios run: the bundled demo, and chains of no-op code handlers. */

export const Text = definePayload('Text', { text: 'string' });

export function codeListener(name: string, peers: readonly string[], handler: Handler): ResolvedListener {
  const config: ListenerConfig = {
    name,
    description: `${name} (no-op code handler)`,
    agent: false,
    peers: [...peers],
    payload: 'Text',
    handlerRef: `bench#${name}`,
    prompt: null,
    model: null,
    maxOutputTokens: ConfigDefaults.maxOutputTokens,
    timeoutSeconds: ConfigDefaults.listenerTimeoutSeconds,
    maxMessagesPerReply: null,
  };
  return { config, handler, handlerVersion: `bench:${name}` };
}

/** The limits a default organism.yaml gets, unless a scenario says otherwise. */
export function benchConfig(listeners: readonly ResolvedListener[], overrides: Partial<OrganismConfig> = {}): OrganismConfig {
  return {
    name: 'bench',
    maxTokensPerThread: ConfigDefaults.maxTokensPerThread,
    maxConcurrentHandlers: ConfigDefaults.maxConcurrentHandlers,
    maxConcurrentPerAgent: ConfigDefaults.maxConcurrentPerAgent,
    maxHops: ConfigDefaults.maxHops,
    maxQueue: ConfigDefaults.maxQueue,
    llm: {
      providers: [{ name: 'mock', type: 'mock', baseUrl: null, apiKeyEnv: null, models: [], priority: 0, timeoutSeconds: 30, maxRetries: 0, script: {} }],
      pricing: {},
      maxReplyBytes: ConfigDefaults.maxReplyBytes,
      maxMessagesPerReply: ConfigDefaults.maxMessagesPerReply,
    },
    listeners: listeners.map((l) => l.config),
    payloads: [],
    auth: { tokens: [] },
    journal: { maxAttempts: ConfigDefaults.journalMaxAttempts, retainDays: ConfigDefaults.journalRetainDays, failedRetainDays: ConfigDefaults.journalFailedRetainDays },
    ...overrides,
  };
}

/**
 * A chain of `hops` no-op code listeners: hop1 -> hop2 -> ... -> hopN. Each handler only
 * forwards the payload; the last ends the branch. `onLast` sees every message that reached
 * the end (before its ack).
 */
export function chainOrganism(hops: number, overrides: Partial<OrganismConfig> = {}): LoadedOrganism {
  const listeners: ResolvedListener[] = [];
  for (let i = 1; i <= hops; i++) {
    const next = i < hops ? `hop${i + 1}` : null;
    const handler: Handler = next ? (payload) => send(next, payload) : () => undefined;
    listeners.push(codeListener(`hop${i}`, next ? [next] : [], handler));
  }
  return { path: null, config: benchConfig(listeners, overrides), listeners, payloadTypes: [Text] };
}

/** The bundled offline demo (two mock LLM agents and a code tool), as `organism serve` loads it. */
export async function demoOrganism(): Promise<LoadedOrganism> {
  const loaded = await loadOrganism(DEMO_CONFIG);
  // The demo's mock answers in 200-1500 ms so people can watch agents work; the scenarios
  // measure the control plane, not that pause, so it answers at once here.
  const providers = loaded.config.llm.providers.map((p) => ({ ...p, mockLatencyMs: 0, mockLatencyMaxMs: 0 }));
  return { ...loaded, config: { ...loaded.config, llm: { ...loaded.config.llm, providers } } };
}
