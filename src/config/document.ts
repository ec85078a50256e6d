import { isMap, isScalar, isSeq, type Node } from 'yaml';
import type {
  AuthTokenConfig,
  JournalConfig,
  HumanListenerConfig,
  ListenerConfig,
  LlmRecordMode,
  McpServerConfig,
  MetricsConfig,
  MockBranch,
  MockMatch,
  MockScript,
  MockStep,
  ModelPrice,
  ProviderConfig,
  ReplyFormat,
  TelemetryConfig,
  PrivacyConfig,
  TopLevelSettings,
} from './types.js';
import { ConfigMessages, Expected } from './messages.js';
import { readPayloadDrafts, type PayloadDraft } from './payloads.js';
import { describeNode, MapReader, type ProblemSink, type SeqItem } from './reader.js';
import { parseSlashRegex } from '../llm/providers/mock-match.js';
import {
  BUILTIN_HUMAN,
  BUILTIN_LLM,
  Defaults,
  Keys,
  LLM_RECORD_MODES,
  MAX_TOKENS_PARAMS,
  OTLP_PROTOCOLS,
  PROVIDER_TYPES,
  REPLY_FORMATS,
  RETRY_BACKOFFS,
  TOKEN_ROLES,
  TOOL_REPLAYS,
} from './schema.js';
import { closest } from './suggest.js';
import { remoteA2aUrl } from './handlers.js';
import { checkAgentTools, checkApproval, readToolEntries } from './tools.js';
import { readGuardEntries, readPrivacy, type GuardEntry, type RedactFunctionEntry } from './guards.js';
import { acceptedTypes } from './accepted-types.js';
import { SYSTEM_ERROR_TYPE } from '../core/message.js';
import { readListenerLoopGuard, readLoopGuard, type LoopGuardConfig } from './loop-guard.js';
import type { ScheduleSpec } from '../core/schedule.js';
import type { WebhookConfig } from '../core/webhook.js';
import { checkInterop, readSchedules, readWebhooks } from './interop.js';

/** A section read from YAML, kept with its reader so later checks can point into the file. */
export interface Located<T> {
  readonly value: T;
  readonly at: MapReader;
}

/** Everything read from the document before handler modules are loaded. */
export interface ConfigDraft extends TopLevelSettings {
  readonly providers: readonly Located<ProviderConfig>[];
  readonly pricing: Readonly<Record<string, ModelPrice>>;
  readonly llmRecord: LlmRecordMode;
  readonly mcpServers: readonly Located<McpServerConfig>[];
  readonly maxReplyBytes: number;
  readonly maxMessagesPerReply: number;
  readonly listeners: readonly Located<ListenerConfig>[];
  readonly payloads: readonly PayloadDraft[];
  readonly tokens: readonly Located<AuthTokenConfig>[];
  readonly journal: JournalConfig;
  readonly metrics: MetricsConfig;
  readonly telemetry: TelemetryConfig;
  /** Top-level `guards:`, with their places. */
  readonly guards: readonly GuardEntry[];
  readonly privacy: PrivacyConfig;
  /** `privacy.redact` entries naming module functions, with their places. */
  readonly redactFunctions: readonly RedactFunctionEntry[];
  readonly loopGuard: LoopGuardConfig;
  readonly schedules: readonly Located<ScheduleSpec>[];
  readonly webhooks: readonly Located<WebhookConfig>[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True for values that look like a credential rather than a variable name. */
export function looksLikeSecret(value: string): boolean {
  if (/^(sk-|sk_|xai-|ghp_|gho_|github_pat_|AKIA|AIza|Bearer\s)/.test(value)) return true;
  if (value.length >= 24 && /[a-z]/.test(value) && /[A-Z]/.test(value) && /[0-9]/.test(value)) return true;
  return value.length >= 40 && !/_/.test(value);
}

/** Reads an `*_env` key: an env var name, never a secret (whose value must not be echoed). */
function envName(r: MapReader, key: string, required: boolean): string | null {
  const value = r.string(key, required);
  if (value === null) return null;
  if (looksLikeSecret(value)) {
    r.problem(key, ConfigMessages.secretInsteadOfEnvName(key));
    return null;
  }
  if (!ENV_NAME.test(value)) {
    r.problem(key, ConfigMessages.badEnvName(key));
    return null;
  }
  return value;
}

/** Reads the whole document into a draft, reporting every local problem on the way. */
export function readDocument(sink: ProblemSink, root: Node | null): ConfigDraft | null {
  if (root === null || !isMap(root)) {
    sink.add(root, '', ConfigMessages.topLevelNotMapping());
    return null;
  }
  const top = new MapReader(sink, root, '', Keys.top);
  const organism = top.map('organism', Keys.organism, true);
  const name = organism?.string('name', true) ?? '';
  const llm = top.map('llm', Keys.llm);
  const auth = top.map('auth', Keys.auth);
  const journal = top.map('journal', Keys.journal);
  const metrics = top.map('metrics', Keys.metrics);
  const telemetry = top.map('telemetry', Keys.telemetry);
  const privacy = readPrivacy(top.map('privacy', Keys.privacy));
  return {
    guards: readGuardEntries(top),
    privacy: privacy.config,
    redactFunctions: privacy.functions,
    name,
    maxTokensPerThread: top.integer('max_tokens_per_thread', Defaults.maxTokensPerThread, 1),
    maxConcurrentHandlers: top.integer('max_concurrent_handlers', Defaults.maxConcurrentHandlers, 1),
    maxConcurrentPerAgent: top.integer('max_concurrent_per_agent', Defaults.maxConcurrentPerAgent, 1),
    maxHops: top.integer('max_hops', Defaults.maxHops, 1),
    maxQueue: top.integer('max_queue', Defaults.maxQueue, 1),
    providers: (llm?.list('providers', false) ?? []).flatMap((item) => {
      const r = MapReader.open(sink, item.node, item.path, Keys.provider);
      return r ? [{ value: readProvider(r), at: r }] : [];
    }),
    pricing: readPricing(llm?.map('pricing', null) ?? null),
    llmRecord: llm?.enumeration('record', LLM_RECORD_MODES, false) ?? 'full',
    mcpServers: (top.list('mcp_servers', false) ?? []).flatMap((item) => {
      const r = MapReader.open(sink, item.node, item.path, Keys.mcpServer);
      return r ? [{ value: readMcpServer(r), at: r }] : [];
    }),
    maxReplyBytes: llm?.integer('max_reply_bytes', Defaults.maxReplyBytes, 1) ?? Defaults.maxReplyBytes,
    maxMessagesPerReply: llm?.integer('max_messages_per_reply', Defaults.maxMessagesPerReply, 1) ?? Defaults.maxMessagesPerReply,
    listeners: (top.list('listeners', true) ?? []).flatMap((item) => {
      const r = MapReader.open(sink, item.node, item.path, Keys.listener);
      return r ? [{ value: readListener(r), at: r }] : [];
    }),
    payloads: readPayloadDrafts(top.map('payloads', null)),
    tokens: (auth?.list('tokens', false) ?? []).flatMap((item) => {
      const r = MapReader.open(sink, item.node, item.path, Keys.token);
      return r ? [{ value: readToken(r), at: r }] : [];
    }),
    journal: {
      maxAttempts: journal?.integer('max_attempts', Defaults.journalMaxAttempts, 1) ?? Defaults.journalMaxAttempts,
      retainDays: journal?.integer('retain_days', Defaults.journalRetainDays, 1) ?? Defaults.journalRetainDays,
      failedRetainDays: journal?.integer('failed_retain_days', Defaults.journalFailedRetainDays, 1) ?? Defaults.journalFailedRetainDays,
    },
    metrics: { enabled: metrics?.boolean('enabled', true) ?? true, public: metrics?.boolean('public', false) ?? false },
    telemetry: readTelemetry(telemetry),
    loopGuard: readLoopGuard(top),
    schedules: readSchedules(sink, top.list('schedules', false) ?? []),
    webhooks: readWebhooks(sink, top.list('webhooks', false) ?? []),
  };
}

function readTelemetry(r: MapReader | null): TelemetryConfig {
  const otlp = r?.map('otlp', Keys.otlp) ?? null;
  let endpoint: string | null = null;
  if (otlp) {
    endpoint = otlp.string('endpoint', true);
    if (endpoint !== null && !/^https?:\/\/[^\s]+$/.test(endpoint)) {
      otlp.problem('endpoint', ConfigMessages.badUrl(JSON.stringify(endpoint)));
      endpoint = null;
    }
  }
  return {
    otlp: otlp && endpoint !== null ? { endpoint, protocol: otlp.enumeration('protocol', OTLP_PROTOCOLS, false) } : null,
    captureContent: r?.boolean('capture_content', false) ?? false,
    contextManager: r?.boolean('context_manager', false) ?? false,
    traceProbes: r?.boolean('trace_probes', false) ?? false,
  };
}

function readProvider(r: MapReader): ProviderConfig {
  const type = r.enumeration('type', PROVIDER_TYPES, true) ?? 'mock';
  const baseUrl = r.string('base_url');
  if (baseUrl !== null && !/^https?:\/\/[^\s]+$/.test(baseUrl)) r.problem('base_url', ConfigMessages.badUrl(JSON.stringify(baseUrl)));
  const script = r.map('script', null);
  if (script && type !== 'mock') r.problem('script', ConfigMessages.scriptOnlyForMock());
  return {
    name: r.string('name', true) ?? '',
    type,
    baseUrl,
    apiKeyEnv: envName(r, 'api_key_env', false),
    models: r.stringList('models'),
    priority: r.integer('priority', Defaults.providerPriority, null),
    timeoutSeconds: r.number('timeout_seconds', Defaults.providerTimeoutSeconds, true),
    maxRetries: r.integer('max_retries', Defaults.providerMaxRetries, 0),
    script: script ? readScript(script) : {},
    ...(type === 'mock' ? readMockLatency(r) : {}),
    replyFormat: r.enumeration('reply_format', REPLY_FORMATS, false) ?? 'tools',
    maxTokensParam: readMaxTokensParam(r, type),
  };
}

function readMaxTokensParam(r: MapReader, type: ProviderConfig['type']): ProviderConfig['maxTokensParam'] {
  const value = r.enumeration('max_tokens_param', MAX_TOKENS_PARAMS, false);
  if (value !== null && type !== 'openai') r.problem('max_tokens_param', ConfigMessages.maxTokensParamOnlyForOpenAi());
  return value;
}

function readMcpServer(r: MapReader): McpServerConfig {
  const commandNode = r.valueNode('command');
  let command: string[] | null = null;
  if (commandNode !== null) {
    // One string is split on whitespace (no shell); a list is taken as program and arguments.
    command = isScalar(commandNode) ? (r.string('command') ?? '').split(/\s+/).filter(Boolean) : r.stringList('command');
  }
  const url = r.string('url');
  if (url !== null && !/^https?:\/\/[^\s]+$/.test(url)) r.problem('url', ConfigMessages.badUrl(JSON.stringify(url)));
  if ((command === null || command.length === 0) === (url === null)) r.problem(command === null ? 'name' : 'command', ConfigMessages.mcpNeedsOneTransport());
  return {
    name: r.string('name', true) ?? '',
    command: command && command.length > 0 ? command : null,
    url,
    tools: r.has('tools') ? r.stringList('tools') : null,
    timeoutSeconds: r.number('timeout_seconds', Defaults.mcpTimeoutSeconds, true),
  };
}

/**
 * Mock script: agent name -> steps (a single string counts as a one-item list), or a list of
 * branches (`{when: {field: match}, steps: [...]}`), the first whose `when` the incoming
 * payload matches answering (a branch without `when`, last, answers the rest).
 */
function readScript(script: MapReader): Record<string, MockScript> {
  const out: Record<string, MockScript> = {};
  for (const agent of script.keys()) {
    const node = script.valueNode(agent);
    if (node !== null && isScalar(node) && typeof node.value === 'string') {
      out[agent] = [node.value];
      continue;
    }
    const items = script.list(agent, false) ?? [];
    const branches = items.filter((item) => isMap(item.node) && (item.node.has('steps') || item.node.has('when')));
    if (branches.length === 0) {
      out[agent] = readSteps(script.sink, items);
      continue;
    }
    if (branches.length < items.length) {
      const step = items.find((item) => !branches.includes(item))!;
      script.sink.add(step.node, step.path, ConfigMessages.mockBranchesMixed(agent));
    }
    out[agent] = readBranches(script.sink, agent, branches);
  }
  return out;
}

function readSteps(sink: ProblemSink, items: readonly SeqItem[]): MockStep[] {
  return items.flatMap((item): MockStep[] => {
    if (isScalar(item.node) && typeof item.node.value === 'string') return [item.node.value];
    const step = isMap(item.node) ? MapReader.open(sink, item.node, item.path, Keys.mockStep) : null;
    const calls = step?.list('calls', true) ?? null;
    if (!step || calls === null) {
      if (!step) sink.add(item.node, item.path, ConfigMessages.mockStepCalls());
      return [];
    }
    return [
      {
        ...(step.has('text') ? { text: step.string('text') ?? '' } : {}),
        calls: calls.flatMap((c) => {
          const call = MapReader.open(sink, c.node, c.path, Keys.mockCall);
          if (!call) return [];
          const args = call.valueNode('arguments');
          return [{ name: call.string('name', true) ?? '', arguments: args === null ? {} : (args.toJSON() as unknown) }];
        }),
      },
    ];
  });
}

function readBranches(sink: ProblemSink, agent: string, items: readonly SeqItem[]): MockBranch[] {
  const out: MockBranch[] = [];
  items.forEach((item, i) => {
    const branch = MapReader.open(sink, item.node, item.path, Keys.mockBranch);
    if (!branch) return;
    const stepsNode = branch.valueNode('steps');
    let steps: MockStep[] = [];
    if (stepsNode !== null && isScalar(stepsNode) && typeof stepsNode.value === 'string') steps = [stepsNode.value];
    else {
      const list = stepsNode === null ? null : branch.list('steps', true);
      if (stepsNode === null || list?.length === 0) branch.problem('steps', ConfigMessages.mockBranchSteps());
      steps = readSteps(sink, list ?? []);
    }
    const hasWhen = branch.valueNode('when') !== null;
    const when = hasWhen ? readWhen(branch) : null; // a `when` that is no mapping is reported there
    if (!hasWhen && i < items.length - 1) sink.add(item.node, item.path, ConfigMessages.mockBranchDefaultNotLast(agent));
    out.push(when === null ? { steps } : { when, steps });
  });
  return out;
}

/** `when: {field: value | /regex/flags | [alternatives]}`: each value checked (a regex must compile). */
function readWhen(branch: MapReader): Record<string, MockMatch> | null {
  const when = branch.map('when', null);
  if (!when) return null;
  const out: Record<string, MockMatch> = {};
  for (const field of when.keys()) {
    const node = when.valueNode(field);
    const value: unknown = node === null ? null : node.toJSON();
    const alternatives = Array.isArray(value) ? value : [value];
    let ok = alternatives.length > 0;
    for (const v of alternatives) {
      if (v !== null && typeof v === 'object') {
        when.problem(field, ConfigMessages.mockWhenValue(field));
        ok = false;
        break;
      }
      const problem = typeof v === 'string' ? regexProblem(v) : null;
      if (problem !== null) {
        when.problem(field, ConfigMessages.mockWhenRegex(field, v as string, problem));
        ok = false;
        break;
      }
    }
    if (ok) out[field] = value as MockMatch;
  }
  if (when.keys().length === 0) branch.problem('when', ConfigMessages.mockWhenEmpty());
  return out;
}

/** Why a `/pattern/flags` string does not compile (null: it does, or it is no regex). */
function regexProblem(text: string): string | null {
  const parsed = parseSlashRegex(text);
  if (parsed === null) return null;
  try {
    new RegExp(parsed.source, parsed.flags);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function readPricing(pricing: MapReader | null): Record<string, ModelPrice> {
  const out: Record<string, ModelPrice> = {};
  if (!pricing) return out;
  for (const model of pricing.keys()) {
    const r = pricing.map(model, Keys.price, true);
    if (!r) continue;
    out[model] = {
      prompt: r.number('prompt', 0, false, true),
      completion: r.number('completion', 0, false, true),
      cacheRead: r.has('cache_read') ? r.number('cache_read', 0, false) : null,
      cacheWrite: r.has('cache_write') ? r.number('cache_write', 0, false) : null,
    };
  }
  return out;
}

function readListener(r: MapReader): ListenerConfig {
  const handlerRef = r.string('handler', true) ?? '';
  const payloadTypes = isSeq(r.valueNode('payload')) ? readPayloadList(r) : null;
  return {
    name: r.string('name', true) ?? '',
    description: r.string('description') ?? '',
    agent: r.boolean('agent', handlerRef === BUILTIN_LLM),
    peers: r.stringList('peers'),
    ...(payloadTypes ? { payload: payloadTypes[0] ?? '', payloadTypes } : { payload: r.string('payload', true) ?? '' }),
    handlerRef,
    prompt: r.string('prompt'),
    model: r.string('model'),
    maxOutputTokens: r.integer('max_output_tokens', Defaults.maxOutputTokens, 1),
    timeoutSeconds: r.number('timeout_seconds', Defaults.listenerTimeoutSeconds, true),
    replyFormat: r.enumeration('reply_format', REPLY_FORMATS, false),
    mcpServers: r.stringList('mcp_servers'),
    ...(r.has('tools') ? { tools: readToolEntries(r) } : {}),
    ...(r.has('approval') ? { approval: r.stringList('approval') } : {}),
    ...(r.has('guards') ? { guards: readGuardEntries(r).map((e) => e.config) } : {}),
    maxToolRounds: r.integer('max_tool_rounds', Defaults.maxToolRounds, 1),
    maxToolCallsPerRound: r.integer('max_tool_calls_per_round', Defaults.maxToolCallsPerRound, 1),
    maxMessagesPerReply: r.has('max_messages_per_reply') ? r.integer('max_messages_per_reply', Defaults.maxMessagesPerReply, 1) : null,
    ...(r.has('replay') ? { replay: r.enumeration('replay', TOOL_REPLAYS, false) ?? 'run' } : {}),
    ...readRetry(r),
    ...(r.has('on_error') ? { onError: r.string('on_error') ?? '' } : {}),
    ...readHuman(r, handlerRef),
    ...readExpose(r),
    ...readRemote(r, handlerRef),
    ...readListenerLoopGuard(r),
  };
}

/** `expose: {a2a, mcp, a2a_public_card}` (issue 31); absent: not exposed. */
function readExpose(r: MapReader): Pick<ListenerConfig, 'expose'> {
  const expose = r.map('expose', Keys.expose);
  if (!expose) return {};
  const a2a = expose.boolean('a2a', false);
  const a2aPublicCard = expose.boolean('a2a_public_card', false);
  if (a2aPublicCard && !a2a) expose.problem('a2a_public_card', ConfigMessages.publicCardWithoutA2a());
  return { expose: { a2a, mcp: expose.boolean('mcp', false), a2aPublicCard } };
}

/** `handler: a2a:<url>` with `token_env` and `max_retries`; those keys on any other listener are refused. */
function readRemote(r: MapReader, handlerRef: string): Pick<ListenerConfig, 'remote'> {
  const url = remoteA2aUrl(handlerRef);
  if (url === null) {
    for (const key of ['token_env', 'max_retries']) if (r.has(key)) r.problem(key, ConfigMessages.remoteOnlyKey(key));
    return {};
  }
  // An LLM agent's keys are refused when they say something (`null` and `[]` are what the sanitized view writes).
  for (const key of ['prompt', 'model', 'tools', 'approval', 'mcp_servers', 'reply_format']) {
    const value: unknown = r.valueNode(key)?.toJSON();
    if (r.has(key) && value !== null && !(Array.isArray(value) && value.length === 0)) r.problem(key, ConfigMessages.remoteNotAgentKey(key));
  }
  return { remote: { url, tokenEnv: r.has('token_env') ? envName(r, 'token_env', true) : null, maxRetries: r.integer('max_retries', Defaults.remoteA2aMaxRetries, 0) } };
}

/** `retry: {max_attempts, backoff, initial_seconds, max_seconds}` (absent: no retries). */
function readRetry(r: MapReader): Pick<ListenerConfig, 'retry'> {
  const retry = r.map('retry', Keys.retry);
  if (!retry) return {};
  const initialSeconds = retry.number('initial_seconds', Defaults.retryInitialSeconds, false);
  const maxSeconds = retry.number('max_seconds', Math.max(Defaults.retryMaxSeconds, initialSeconds), false);
  if (maxSeconds < initialSeconds) retry.problem('max_seconds', ConfigMessages.retryMaxBelowInitial(initialSeconds, maxSeconds));
  return {
    retry: {
      maxAttempts: retry.integer('max_attempts', Defaults.journalMaxAttempts, 1),
      backoff: retry.enumeration('backoff', RETRY_BACKOFFS, false) ?? Defaults.retryBackoff,
      initialSeconds,
      maxSeconds: Math.max(initialSeconds, maxSeconds),
    },
  };
}

/** `builtin:human`: its own `timeout_seconds` (none unless set) and `on_timeout`; checks what does not apply. */
function readHuman(r: MapReader, handlerRef: string): { human?: HumanListenerConfig } {
  if (handlerRef !== BUILTIN_HUMAN) {
    if (r.has('on_timeout')) r.problem('on_timeout', ConfigMessages.onTimeoutNotHuman());
    return {};
  }
  for (const key of ['prompt', 'model', 'tools', 'approval', 'mcp_servers', 'reply_format', 'max_tool_rounds', 'max_tool_calls_per_round', 'max_messages_per_reply', 'guards'])
    if (r.has(key)) r.problem(key, ConfigMessages.humanNotAgentKey(key));
  const timeoutSeconds = r.has('timeout_seconds') ? r.number('timeout_seconds', 1, true) : null;
  let onTimeout: HumanListenerConfig['onTimeout'] = 'fail';
  const node = r.valueNode('on_timeout');
  if (node !== null) {
    const value: unknown = node.toJSON();
    const reply = isPlainObject(value) && Object.keys(value).length === 1 ? value['reply'] : undefined;
    if (value === 'fail') onTimeout = 'fail';
    else if (isPlainObject(reply)) onTimeout = { reply };
    else r.problem('on_timeout', ConfigMessages.onTimeoutShape());
    if (timeoutSeconds === null) r.problem('on_timeout', ConfigMessages.onTimeoutWithoutTimeout());
  }
  return { human: { timeoutSeconds, onTimeout } };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `payload: [A, B]`: the types as written (each a string, none repeated, at least one). The
 * names are checked against the known types later, once every type is known.
 */
function readPayloadList(r: MapReader): string[] {
  const items = r.list('payload', true) ?? [];
  if (items.length === 0) r.problem('payload', ConfigMessages.emptyPayloadList());
  const out: string[] = [];
  for (const item of items) {
    const v = isScalar(item.node) ? item.node.value : undefined;
    if (typeof v !== 'string') r.sink.add(item.node, item.path, ConfigMessages.wrongType(Expected.string, describeNode(item.node)));
    else if (out.includes(v)) r.sink.add(item.node, item.path, ConfigMessages.duplicateListenerPayload(v));
    else out.push(v);
  }
  return out;
}

function readToken(r: MapReader): AuthTokenConfig {
  return {
    name: r.string('name', true) ?? '',
    role: r.enumeration('role', TOKEN_ROLES, true) ?? 'viewer',
    tokenEnv: envName(r, 'token_env', true) ?? '',
  };
}

const LISTENER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

/** Checks that need the whole document: names, duplicates, peers, LLM listeners vs providers. */
export function checkCrossReferences(sink: ProblemSink, draft: ConfigDraft): void {
  checkUnique(
    sink,
    'provider',
    draft.providers.map((p) => ({ name: p.value.name, at: p.at })),
  );
  checkUnique(
    sink,
    'auth token',
    draft.tokens.map((t) => ({ name: t.value.name, at: t.at })),
  );
  checkUnique(
    sink,
    'listener',
    draft.listeners.map((l) => ({ name: l.value.name, at: l.at })),
  );
  checkUnique(
    sink,
    'MCP server',
    draft.mcpServers.map((m) => ({ name: m.value.name, at: m.at })),
  );
  const mcpNames = draft.mcpServers.map((m) => m.value.name).filter((n) => n !== '');

  const names = draft.listeners.map((l) => l.value.name).filter((n) => n !== '');
  checkInterop(sink, draft.schedules, draft.webhooks, names);
  for (const { value: l, at } of draft.listeners) {
    if (l.name !== '' && !LISTENER_NAME.test(l.name)) at.problem('name', ConfigMessages.invalidName('listener', l.name));
    else if (l.name.startsWith('system.')) at.problem('name', ConfigMessages.reservedSystemName(l.name));
    checkPeers(at, l, names);
    checkOnError(
      at,
      l,
      draft.listeners.map((x) => x.value),
    );
    for (const item of at.items('mcp_servers')) {
      const server = isScalar(item.node) ? item.node.value : undefined;
      if (typeof server === 'string' && !mcpNames.includes(server)) at.sink.add(item.node, item.path, ConfigMessages.unknownMcpServer(server, closest(server, mcpNames)));
    }
    if (l.handlerRef === BUILTIN_LLM)
      checkLlmListener(
        sink,
        at,
        l,
        draft.providers.map((p) => p.value),
      );
    checkAgentTools(
      { value: l, at },
      draft.mcpServers.map((m) => m.value),
      agentReplyFormat(
        l,
        draft.providers.map((p) => p.value),
      ),
    );
    checkApproval(
      { value: l, at },
      draft.mcpServers.map((m) => m.value),
      agentReplyFormat(
        l,
        draft.providers.map((p) => p.value),
      ),
    );
  }

  for (const { value: p, at } of draft.providers) {
    const script = at.quietMap('script');
    if (!script) continue;
    for (const agent of Object.keys(p.script)) {
      if (!names.includes(agent)) {
        sink.add(script.keyNode(agent), script.pathOf(agent), ConfigMessages.scriptUnknownListener(agent, closest(agent, names)));
      }
    }
  }
}

function checkUnique(sink: ProblemSink, what: string, items: readonly { name: string; at: MapReader }[]): void {
  const first = new Map<string, MapReader>();
  for (const { name, at } of items) {
    if (name === '') continue;
    const earlier = first.get(name);
    if (earlier) at.problem('name', ConfigMessages.duplicateName(what, name, sink.lineOf(earlier.nodeFor('name'))));
    else first.set(name, at);
  }
}

function checkPeers(at: MapReader, l: ListenerConfig, names: readonly string[]): void {
  const items = at.items('peers');
  const seen = new Set<string>();
  items.forEach((item) => {
    const peer = isScalar(item.node) ? item.node.value : undefined;
    if (typeof peer !== 'string') return;
    if (peer === l.name) at.sink.add(item.node, item.path, ConfigMessages.selfPeer(peer));
    else if (!names.includes(peer))
      at.sink.add(
        item.node,
        item.path,
        ConfigMessages.unknownPeer(
          peer,
          closest(peer, names),
          names.filter((n) => n !== l.name),
        ),
      );
    else if (seen.has(peer)) at.sink.add(item.node, item.path, ConfigMessages.duplicatePeer(peer));
    seen.add(peer);
  });
}

/**
 * `on_error`: a declared peer of the listener (a failure is something the listener sends on,
 * under the same rules as its messages) that accepts SystemError, and not the listener itself
 * (its own failures would feed it).
 */
function checkOnError(at: MapReader, l: ListenerConfig, listeners: readonly ListenerConfig[]): void {
  const target = l.onError;
  if (target === undefined || target === '') return;
  const peer = listeners.find((x) => x.name === target);
  const problem =
    target === l.name
      ? ConfigMessages.onErrorSelf(target)
      : !peer
        ? ConfigMessages.onErrorUnknown(
            target,
            closest(
              target,
              listeners.map((x) => x.name),
            ),
          )
        : !l.peers.includes(target)
          ? ConfigMessages.onErrorNotPeer(target, l.name)
          : !acceptedTypes(peer).includes(SYSTEM_ERROR_TYPE)
            ? ConfigMessages.onErrorNotAccepting(target)
            : null;
  if (problem) at.problem('on_error', problem);
}

/** True when a provider serves `model`: listed by exact name or prefix, or it lists no models. */
export function providerServes(p: ProviderConfig, model: string): boolean {
  return p.models.length === 0 || p.models.some((m) => model === m || model.startsWith(m));
}

/** The reply format of an agent: its own, else that of the provider serving its model (first by priority), else `tools`. */
export function agentReplyFormat(listener: ListenerConfig, providers: readonly ProviderConfig[]): ReplyFormat {
  if (listener.replyFormat) return listener.replyFormat;
  const model = listener.model;
  const sorted = [...providers].sort((a, b) => a.priority - b.priority);
  const provider = model === null ? sorted[0] : sorted.find((p) => providerServes(p, model));
  return provider?.replyFormat ?? 'tools';
}

function checkLlmListener(sink: ProblemSink, at: MapReader, l: ListenerConfig, providers: readonly ProviderConfig[]): void {
  if (l.prompt === null || l.prompt.trim() === '') {
    if (at.valueNode('prompt') === null) sink.add(at.node, at.pathOf('prompt'), ConfigMessages.llmNeedsPrompt());
    else at.problem('prompt', ConfigMessages.llmNeedsPrompt());
  }
  if (providers.length === 0) return;
  if (l.model === null) {
    if (at.valueNode('model') === null) sink.add(at.node, at.pathOf('model'), ConfigMessages.llmNeedsModel());
    return;
  }
  const model = l.model;
  if (!providers.some((p) => providerServes(p, model))) {
    at.problem(
      'model',
      ConfigMessages.modelNotServed(
        model,
        providers.map((p) => `${p.name} (${p.models.join(', ')})`),
      ),
    );
  }
}

/**
 * Mock latency: `latency_ms: 300` (fixed) or `latency_ms: {min: 200, max: 1500, seed: 7}`
 * (uniform in the range, from a seeded sequence so runs repeat).
 */
function readMockLatency(r: MapReader): Pick<ProviderConfig, 'mockLatencyMs' | 'mockLatencyMaxMs' | 'mockLatencySeed'> {
  if (!isMap(r.valueNode('latency_ms'))) {
    const fixed = r.integer('latency_ms', 0, 0);
    return { mockLatencyMs: fixed, mockLatencyMaxMs: fixed };
  }
  const range = r.map('latency_ms', ['min', 'max', 'seed'])!;
  const min = range.integer('min', 0, 0);
  const max = range.integer('max', min, 0);
  if (min > max) r.problem('latency_ms', ConfigMessages.latencyRange(min, max));
  return { mockLatencyMs: min, mockLatencyMaxMs: Math.max(min, max), mockLatencySeed: range.integer('seed', 1, null) };
}
