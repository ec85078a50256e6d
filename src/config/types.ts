import type { Handler } from '../core/handler.js';
import type { PayloadTypeDef } from '../payload/types.js';
import type { CodeTool } from '../agent/code-tool.js';
import type { Guard, RedactFunction } from '../core/guard.js';
import type { DetectorName } from '../util/pii.js';
import type { ScheduleSpec } from '../core/schedule.js';
import type { WebhookConfig } from '../core/webhook.js';

/** The LLM provider kinds a `llm.providers[]` entry may name. */
export type ProviderType = 'mock' | 'openai' | 'anthropic';

/** How a `builtin:llm` agent answers: native tool calls, or the XML text format. */
export type ReplyFormat = 'tools' | 'xml';

/** What is kept of each LLM call: everything, everything but prompts and answers, or nothing. */
export type LlmRecordMode = 'full' | 'metadata' | 'off';

/** One step of a mock script: a text answer (template), or tool calls as the model would make them. */
export type MockStep =
  | string
  | {
      readonly text?: string;
      /** `arguments`: an object (templates filled in its strings) or a string sent verbatim (e.g. malformed JSON). */
      readonly calls: ReadonlyArray<{ readonly name: string; readonly arguments?: unknown }>;
    };

/**
 * What a `when:` field of a mock script branch matches: a value (compared as text), a
 * `/regular expression/flags` string (tested against the text), or a list of either (any).
 */
export type MockMatch = string | number | boolean | null | ReadonlyArray<string | number | boolean | null>;

/** One branch of a mock script: its steps answer the payloads whose fields match `when` (absent: every payload). */
export interface MockBranch {
  /** Payload field (dotted path for nested fields) -> what it must match; every entry must. */
  readonly when?: Readonly<Record<string, MockMatch>>;
  /** Taken in turn as an unbranched script's are (turn N = the agent's N-th answer in the thread). */
  readonly steps: readonly MockStep[];
}

/** An agent's mock script: steps taken in turn, or branches chosen by the incoming payload. */
export type MockScript = readonly MockStep[] | readonly MockBranch[];

/** An MCP server whose tools agents may be given (stdio child process or Streamable HTTP). */
export interface McpServerConfig {
  readonly name: string;
  /** stdio: the command line (program and arguments), run in the config file's directory. */
  readonly command: readonly string[] | null;
  /** Streamable HTTP endpoint. */
  readonly url: string | null;
  /** Names of the server's tools to offer; null = all of them. */
  readonly tools: readonly string[] | null;
  /** Per tool call. */
  readonly timeoutSeconds: number;
}

/** One `llm.providers[]` entry of organism.yaml, resolved. */
export interface ProviderConfig {
  readonly name: string;
  readonly type: ProviderType;
  readonly baseUrl: string | null;
  /** Name of the env var holding the key. The key itself is read at call time, never stored. */
  readonly apiKeyEnv: string | null;
  /** Model names or prefixes this provider serves; empty = every model. */
  readonly models: readonly string[];
  /** Lower number = tried first. */
  readonly priority: number;
  readonly timeoutSeconds: number;
  readonly maxRetries: number;
  /** Mock only: scripted replies per agent name (templates, or branches on the payload; see docs/configuration.md). */
  readonly script: Readonly<Record<string, MockScript>>;
  /** Mock only: simulated response time (key `latency_ms`), to watch agents in the `waiting` state. */
  readonly mockLatencyMs?: number;
  /** The reply format of agents whose model this provider serves, unless the listener says (default `tools`). */
  readonly replyFormat?: ReplyFormat;
  /** OpenAI only: the token limit's parameter; absent = `max_completion_tokens` for api.openai.com, `max_tokens` elsewhere. */
  readonly maxTokensParam?: 'max_completion_tokens' | 'max_tokens' | null;
  /** Mock only: upper end of the latency range (`latency_ms.max`); equal to mockLatencyMs when fixed. */
  readonly mockLatencyMaxMs?: number;
  /** Mock only: seed of the latency sequence (`latency_ms.seed`). */
  readonly mockLatencySeed?: number;
}

/** USD per 1M tokens. */
export interface ModelPrice {
  readonly prompt: number;
  readonly completion: number;
  readonly cacheRead: number | null;
  readonly cacheWrite: number | null;
}

/** How a fork's tool calls run (listener `replay:`). */
export type ToolReplay = 'run' | 'recorded';

/** One `listeners[]` entry of organism.yaml, resolved (a handler module or a `builtin:llm` agent). */
export interface ListenerConfig {
  readonly name: string;
  readonly description: string;
  readonly agent: boolean;
  readonly peers: readonly string[];
  /** Name of the payload type it accepts (with `payload: [A, B]`: the first of them). */
  readonly payload: string;
  /** `payload: [A, B]`: every type it accepts, in the order written; absent for `payload: A` (see `acceptedTypes`). */
  readonly payloadTypes?: readonly string[];
  /** As written: `./path.ts#export` or `builtin:llm`. */
  readonly handlerRef: string;
  readonly prompt: string | null;
  readonly model: string | null;
  readonly maxOutputTokens: number;
  readonly timeoutSeconds: number;
  /** null: the serving provider's `reply_format` (default `tools`). */
  readonly replyFormat?: ReplyFormat | null;
  /** Names of MCP servers (organism.yaml `mcp_servers`) whose tools this agent is given. */
  readonly mcpServers?: readonly string[];
  /** LLM agents: functions of the developer's modules offered to the model as tools (`tools:`); absent when not given. */
  readonly tools?: readonly CodeToolConfig[];
  /** LLM agents (tools mode): names of its tools whose calls wait for a person's approval (`approval:`); absent: none. */
  readonly approval?: readonly string[];
  /** Guardrails of its LLM calls (`guards:`), as written; absent: none (organism-wide ones still apply). */
  readonly guards?: readonly GuardConfig[];
  /** Rounds of tool calls (MCP and code) one delivery may make. */
  readonly maxToolRounds?: number;
  /** Tool calls (MCP and code) one answer (round) may run; the calls past it are answered with an error result. */
  readonly maxToolCallsPerRound?: number;
  /** LLM agents: messages one answer may send; null = `llm.max_messages_per_reply`. */
  readonly maxMessagesPerReply: number | null;
  /**
   * LLM agents (`replay:`), in a fork replaying from the record (time travel): `run` (default)
   * runs its code and MCP tool calls again; `recorded` reuses the source thread's recorded
   * results while the call answered from the record asks for the same tool with the same
   * arguments. Absent: `run`.
   */
  readonly replay?: ToolReplay;
  /** `retry:` for thrown handler errors and timeouts; absent: no retry (a failure is final). */
  readonly retry?: RetryPolicy;
  /** `on_error:` the peer whose handler receives the final SystemError of a failed delivery; absent: none. */
  readonly onError?: string;
  /** `handler: builtin:human`: answered by people (absent on every other listener). */
  readonly human?: HumanListenerConfig;
  /** `expose:` (issue 31): served as an A2A agent and/or listed as an MCP tool; absent: neither. */
  readonly expose?: ExposeConfig;
  /** `handler: a2a:<url>` (issue 31): a remote A2A agent answers its deliveries; absent on every other listener. */
  readonly remote?: RemoteA2aConfig;
  /** `loop_guard:` overrides for messages to this listener (issue 30); absent: the organism's. */
  readonly loopGuard?: ListenerLoopGuard;
}

/** A listener's `expose:` block. */
export interface ExposeConfig {
  /** Served as an A2A agent at `/a2a/<listener>`. */
  readonly a2a: boolean;
  /** Listed as a tool at `/mcp`. */
  readonly mcp: boolean;
  /** The agent card needs no token (it describes the payload schemas, so off by default). */
  readonly a2aPublicCard: boolean;
}

/** `handler: a2a:https://host/path`: where the remote agent is and how it is called. */
export interface RemoteA2aConfig {
  /** The agent's base URL (its card at `<url>/.well-known/agent-card.json`). */
  readonly url: string;
  /** Env var holding its bearer token (read at call time); null: no Authorization header. */
  readonly tokenEnv: string | null;
  /** Tries after the first on a network failure, a timeout or a retryable status. */
  readonly maxRetries: number;
}

/** A listener's `retry:` block, resolved. */
export interface RetryPolicy {
  /** Tries in all (the first included); replaces `journal.max_attempts` for this listener. */
  readonly maxAttempts: number;
  /** `exponential`: the wait doubles after each failed try; `fixed`: always `initialSeconds`. */
  readonly backoff: 'exponential' | 'fixed';
  /** The wait after the first failed try. */
  readonly initialSeconds: number;
  /** No wait is longer. */
  readonly maxSeconds: number;
}

/** A `builtin:human` listener's asks: how long one waits, and what happens then. */
export interface HumanListenerConfig {
  /** `timeout_seconds`; null: an ask waits until someone answers it (the listener default does not apply). */
  readonly timeoutSeconds: number | null;
  /** `on_timeout`: `fail` (the ask fails, reason `timeout`) or `{reply: payload}` (answered with that payload, inject form). */
  readonly onTimeout: 'fail' | { readonly reply: Readonly<Record<string, unknown>> };
}

/** One entry of an LLM agent's `tools:`, as written: a function of the developer's, run inside the agent's turn. */
export interface CodeToolConfig {
  /** `./path/to/module.ts#exportName`, relative to the config file. */
  readonly use: string;
  /** The payload type of its arguments (for a plain function); null: the export carries its schema (`defineTool`). */
  readonly input: string | null;
  /** The name the model calls it by; null: the export's name. */
  readonly name: string | null;
  /** What it does, for the model; null: the `defineTool` description, else the input type's. */
  readonly description: string | null;
  /** Per call; null: the `defineTool` value, else bounded by the listener's `timeout_seconds`. */
  readonly timeoutSeconds: number | null;
}

/** One `auth.tokens[]` entry: a named bearer token read from an environment variable. */
export interface AuthTokenConfig {
  readonly name: string;
  /** approver: reads what a viewer reads, and may answer, approve and reject inbox items. */
  readonly role: 'operator' | 'viewer' | 'approver';
  readonly tokenEnv: string;
}

/** The `journal` section: delivery attempts and how long journal rows are kept. */
export interface JournalConfig {
  readonly maxAttempts: number;
  readonly retainDays: number;
  readonly failedRetainDays: number;
}

/** `metrics:` in organism.yaml: GET /metrics (on by default, behind the API tokens unless public). */
export interface MetricsConfig {
  readonly enabled: boolean;
  readonly public: boolean;
}

/** One entry of `guards:` (a listener's or the organism's), as written. */
export type GuardConfig =
  | { readonly kind: 'module'; readonly use: string; readonly name: string | null }
  | { readonly kind: 'max_input_bytes'; readonly bytes: number }
  | { readonly kind: 'forbidden'; readonly patterns: readonly string[] }
  | { readonly kind: 'pii'; readonly detect: readonly DetectorName[]; readonly action: 'block' | 'redact' };

/** `privacy:` in organism.yaml: what is redacted of everything organism records or emits. */
export interface PrivacyConfig {
  /** Built-in detectors. */
  readonly redact: readonly DetectorName[];
  /** The developer's patterns (JavaScript regular expressions). */
  readonly patterns: readonly string[];
  /** The developer's functions (`./module.ts#export`), resolved into LoadedOrganism.redactFunctions. */
  readonly functions: readonly string[];
  /** Redact message payloads in the journal too (default false: they are the application's data). */
  readonly redactPayloads: boolean;
}

/** `telemetry:` in organism.yaml: OpenTelemetry traces (the standard OTEL_* variables also configure them). */
export interface TelemetryConfig {
  /** OTLP/HTTP exporter; null: traces only when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set. */
  readonly otlp: { readonly endpoint: string; readonly protocol: 'http/protobuf' | 'http/json' | null } | null;
  /** Record prompt and completion text on chat spans (off: never). */
  readonly captureContent: boolean;
  /** Install the global AsyncLocalStorage context manager (handlers see the delivery's span as active); costs CPU per promise. Absent: off. */
  readonly contextManager?: boolean;
  /** Trace `GET /health` probes and `GET /metrics` scrapes too (a span each, every few seconds). Absent: off. */
  readonly traceProbes?: boolean;
}

/** The organism's name and run-wide limits: the top-level scalars of organism.yaml. */
export interface TopLevelSettings {
  readonly name: string;
  readonly maxTokensPerThread: number;
  readonly maxConcurrentHandlers: number;
  readonly maxConcurrentPerAgent: number;
  readonly maxHops: number;
  /** Bound on queued messages across the pump (backpressure for injectors). */
  readonly maxQueue: number;
}

/** A validated organism.yaml, with defaults applied. Contains no secrets. */
export interface OrganismConfig extends TopLevelSettings {
  readonly llm: {
    readonly providers: readonly ProviderConfig[];
    readonly pricing: Readonly<Record<string, ModelPrice>>;
    /** What is recorded of each LLM call (default `full`). */
    readonly record?: LlmRecordMode;
    /** Longest LLM answer read, in UTF-8 bytes; a longer one fails its delivery before parsing. */
    readonly maxReplyBytes: number;
    /** Default of `ListenerConfig.maxMessagesPerReply`. */
    readonly maxMessagesPerReply: number;
  };
  readonly mcpServers?: readonly McpServerConfig[];
  readonly listeners: readonly ListenerConfig[];
  readonly payloads: readonly PayloadTypeDef[];
  readonly auth: { readonly tokens: readonly AuthTokenConfig[] };
  readonly journal: JournalConfig;
  /** Absent (configs built in code): the defaults, metrics on and behind the tokens. */
  readonly metrics?: MetricsConfig;
  /** Absent (configs built in code): no traces unless the OTEL_* variables ask for them. */
  readonly telemetry?: TelemetryConfig;
  /** `loop_guard:` (issue 30). Absent (configs built in code): the defaults (on). */
  readonly loopGuard?: LoopGuardConfig;
  /** `schedules:`: payloads injected on a cron expression or an interval (absent: none). */
  readonly schedules?: readonly ScheduleSpec[];
  /** `webhooks:`: events sent, signed, to other systems (absent: none). */
  readonly webhooks?: readonly WebhookConfig[];
  /**
   * Variables substituted into organism.yaml (`${VAR}`) that hold secrets (named by
   * `api_key_env`/`token_env`, or named like one: `*_KEY`, `*TOKEN*`, `*SECRET*`, ...): the
   * sanitized view never shows a value holding one. Absent: none.
   */
  readonly secretVariables?: readonly string[];
  /** Organism-wide `guards:` (before each listener's own); absent: none. */
  readonly guards?: readonly GuardConfig[];
  /** `privacy:`; absent: nothing redacted. */
  readonly privacy?: PrivacyConfig;
}

/** A listener ready to run: its config plus the loaded handler (null for builtin:llm). */
export interface ResolvedListener {
  readonly config: ListenerConfig;
  readonly handler: Handler | null;
  /** Identity of the handler code (module path + export + file mtime), to detect updates on reload. */
  readonly handlerVersion: string;
  /** LLM agents: their code tools (`tools:`), loaded; absent: none. */
  readonly tools?: readonly CodeTool[];
  /** Its guardrails (`guards:`), loaded; absent: none. */
  readonly guards?: readonly Guard[];
}

/** Everything `loadOrganism` produces: the config, loaded handlers and all payload types. */
export interface LoadedOrganism {
  readonly path: string | null;
  readonly config: OrganismConfig;
  readonly listeners: readonly ResolvedListener[];
  /** YAML-declared types plus those exported by handler modules. */
  readonly payloadTypes: readonly PayloadTypeDef[];
  /** What `check` warns of: the config loads, but timeouts defeat failover or env vars are unset. */
  readonly warnings?: readonly ConfigProblem[];
  /** Provider keys (api_key_env) that listeners' models need and that were unset at load: serve and run refuse to start. */
  readonly missingKeys?: readonly ConfigProblem[];
  /** The files it was read from: organism.yaml and every local file its handler modules import (what `serve --watch` watches). */
  readonly sources?: readonly string[];
  /** Organism-wide guardrails (top-level `guards:`), loaded; absent: none. */
  readonly guards?: readonly Guard[];
  /** The developer's functions of `privacy.redact`, loaded; absent: none. */
  readonly redactFunctions?: readonly RedactFunction[];
}

/** One problem found in a config file. */
export interface ConfigProblem {
  readonly file: string;
  /** 1-based; null when the problem has no single place (e.g. a file that cannot be read). */
  readonly line: number | null;
  readonly column: number | null;
  /** e.g. `listeners[2].peers[0]` */
  readonly keyPath: string;
  readonly message: string;
}

/**
 * `loop_guard:` (issue 30): the loop breaker's limits. It watches each thread's traffic and
 * holds the thread when a limit is passed. On by default; the defaults hold a two-listener
 * ping-pong of identical messages well before its 50th message and leave threads of distinct
 * messages alone (see docs/safety.md).
 */
export interface LoopGuardConfig {
  readonly enabled: boolean;
  /** The same edge (sender -> receiver) carrying the same payload (hash of its canonical JSON) more than this many times holds the thread. */
  readonly maxRepeats: number;
  /** A cycle of edges (A->B->A, A->B->C->A) repeated more than this many times without a new payload holds the thread. */
  readonly maxCycles: number;
  /** The longest cycle looked for, in edges (2..). */
  readonly maxCycleLength: number;
  /** Tokens the thread may spend per minute (sliding 60 s); more holds it. 0: not checked. */
  readonly tokensPerMinute: number;
  /** The thread's latest messages looked at (since its last resume). */
  readonly window: number;
}

/** A listener's `loop_guard:`: what it overrides for messages it receives (and the tokens it spends). */
export type ListenerLoopGuard = Partial<Pick<LoopGuardConfig, 'enabled' | 'maxRepeats' | 'maxCycles' | 'tokensPerMinute'>>;
