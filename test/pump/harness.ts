import { ConfigDefaults } from '../../src/config/index.js';
import type { ListenerConfig, LoadedOrganism, OrganismConfig, ProviderConfig, ResolvedListener } from '../../src/config/types.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { Organism, type OrganismOptions } from '../../src/organism/organism.js';
import { definePayload } from '../../src/payload/define.js';
import type { PayloadTypeDef } from '../../src/payload/types.js';
import type { Handler } from '../../src/core/handler.js';

export const Text = definePayload('Text', { text: 'string' });
export const Num = definePayload('Num', { n: 'integer' });

export interface ListenerSpec extends Partial<Omit<ListenerConfig, 'name'>> {
  readonly handler?: Handler | null;
}

export function listener(name: string, spec: ListenerSpec = {}): ResolvedListener {
  const { handler = () => undefined, ...rest } = spec;
  const config: ListenerConfig = {
    name,
    description: rest.description ?? `${name} listener`,
    agent: rest.agent ?? false,
    peers: rest.peers ?? [],
    payload: rest.payloadTypes?.[0] ?? rest.payload ?? 'Text',
    ...(rest.payloadTypes !== undefined ? { payloadTypes: rest.payloadTypes } : {}),
    handlerRef: rest.human !== undefined ? 'builtin:human' : handler === null ? 'builtin:llm' : `test#${name}`,
    prompt: rest.prompt ?? null,
    model: rest.model ?? null,
    maxOutputTokens: rest.maxOutputTokens ?? 256,
    timeoutSeconds: rest.timeoutSeconds ?? 30,
    ...(rest.replyFormat !== undefined ? { replyFormat: rest.replyFormat } : {}),
    ...(rest.mcpServers !== undefined ? { mcpServers: rest.mcpServers } : {}),
    ...(rest.maxToolRounds !== undefined ? { maxToolRounds: rest.maxToolRounds } : {}),
    ...(rest.maxToolCallsPerRound !== undefined ? { maxToolCallsPerRound: rest.maxToolCallsPerRound } : {}),
    maxMessagesPerReply: rest.maxMessagesPerReply ?? null,
    ...(rest.retry !== undefined ? { retry: rest.retry } : {}),
    ...(rest.onError !== undefined ? { onError: rest.onError } : {}),
    ...(rest.human !== undefined ? { human: rest.human } : {}),
  };
  return { config, handler, handlerVersion: `v1:${name}` };
}

export function mockProvider(script: Record<string, string[]> = {}, extra: Partial<ProviderConfig> = {}): ProviderConfig {
  return {
    name: 'mock',
    type: 'mock',
    baseUrl: null,
    apiKeyEnv: null,
    models: [],
    priority: 0,
    timeoutSeconds: 30,
    maxRetries: 0,
    script,
    ...extra,
  };
}

/** Config overrides; an `llm` section may leave out the reply limits (the defaults apply). */
export type ConfigOverrides = Omit<Partial<OrganismConfig>, 'llm'> & {
  readonly llm?: Pick<OrganismConfig['llm'], 'providers' | 'pricing'> & Partial<OrganismConfig['llm']>;
};

export function organismConfig(overrides: ConfigOverrides = {}): OrganismConfig {
  const { llm, ...rest } = overrides;
  return {
    name: 'test',
    maxTokensPerThread: 100_000,
    maxConcurrentHandlers: 20,
    maxConcurrentPerAgent: 5,
    maxHops: 50,
    maxQueue: 10_000,
    listeners: [],
    payloads: [],
    auth: { tokens: [] },
    journal: { maxAttempts: 3, retainDays: 7, failedRetainDays: 30 },
    ...rest,
    llm: {
      providers: [mockProvider()],
      pricing: {},
      maxReplyBytes: ConfigDefaults.maxReplyBytes,
      maxMessagesPerReply: ConfigDefaults.maxMessagesPerReply,
      ...llm,
    },
  };
}

export function loaded(listeners: ResolvedListener[], overrides: ConfigOverrides = {}, payloadTypes: PayloadTypeDef[] = [Text, Num]): LoadedOrganism {
  return {
    path: null,
    config: organismConfig({ ...overrides, listeners: listeners.map((l) => l.config) }),
    listeners,
    payloadTypes,
  };
}

/** Builds and starts an organism, recording every event. */
export async function startOrganism(listeners: ResolvedListener[], overrides: ConfigOverrides = {}, options: OrganismOptions = {}, payloadTypes?: PayloadTypeDef[]) {
  const organism = new Organism(loaded(listeners, overrides, payloadTypes), options);
  const events: OrganismEvent[] = [];
  organism.bus.on((e) => events.push(e));
  await organism.start();
  return { organism, events };
}

/** Polls until `check` returns a truthy value (generous timeout for loaded CI machines). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolves when the thread is no longer active; returns its record. */
export async function settled(organism: Organism, threadId: string) {
  return eventually(
    async () => {
      const t = await organism.thread(threadId);
      return t && t.status !== 'active' ? t : null;
    },
    10_000,
    `thread ${threadId} to settle`,
  );
}

/** A promise with its resolve function exposed. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
