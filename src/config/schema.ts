/** The keys organism.yaml accepts, section by section, and the defaults it applies. */
export const Keys = {
  top: [
    'organism',
    'max_tokens_per_thread',
    'max_concurrent_handlers',
    'max_concurrent_per_agent',
    'max_hops',
    'max_queue',
    'llm',
    'listeners',
    'payloads',
    'auth',
    'journal',
    'mcp_servers',
    'metrics',
    'telemetry',
    'guards',
    'privacy',
    'loop_guard',
    'schedules',
    'webhooks',
  ],
  privacy: ['redact', 'redact_payloads'],
  organism: ['name'],
  llm: ['providers', 'pricing', 'max_reply_bytes', 'max_messages_per_reply', 'record'],
  provider: ['name', 'type', 'base_url', 'api_key_env', 'models', 'priority', 'timeout_seconds', 'max_retries', 'script', 'latency_ms', 'reply_format', 'max_tokens_param'],
  price: ['prompt', 'completion', 'cache_read', 'cache_write'],
  listener: [
    'name',
    'description',
    'agent',
    'peers',
    'payload',
    'handler',
    'prompt',
    'model',
    'max_output_tokens',
    'timeout_seconds',
    'max_messages_per_reply',
    'reply_format',
    'mcp_servers',
    'tools',
    'max_tool_rounds',
    'max_tool_calls_per_round',
    'approval',
    'replay',
    'retry',
    'on_error',
    'on_timeout',
    'guards',
    'expose',
    'token_env',
    'max_retries',
    'loop_guard',
  ],
  expose: ['a2a', 'mcp', 'a2a_public_card'],
  retry: ['max_attempts', 'backoff', 'initial_seconds', 'max_seconds'],
  mcpServer: ['name', 'command', 'url', 'tools', 'timeout_seconds'],
  codeTool: ['use', 'input', 'name', 'description', 'timeout_seconds'],
  mockStep: ['text', 'calls'],
  mockBranch: ['when', 'steps'],
  mockCall: ['name', 'arguments'],
  payloadType: ['description', 'fields'],
  field: ['type', 'optional', 'description'],
  auth: ['tokens'],
  token: ['name', 'role', 'token_env'],
  journal: ['max_attempts', 'retain_days', 'failed_retain_days'],
  metrics: ['enabled', 'public'],
  telemetry: ['otlp', 'capture_content', 'context_manager', 'trace_probes'],
  otlp: ['endpoint', 'protocol'],
  schedule: ['name', 'cron', 'timezone', 'every', 'to', 'payload', 'catch_up'],
  webhook: ['name', 'url', 'events', 'secret_env', 'timeout_seconds', 'retry'],
  webhookRetry: ['max_attempts', 'initial_seconds', 'max_seconds'],
} as const;

export const Defaults = {
  maxTokensPerThread: 100_000,
  maxConcurrentHandlers: 20,
  maxConcurrentPerAgent: 5,
  maxHops: 50,
  maxQueue: 10_000,
  listenerTimeoutSeconds: 30,
  maxOutputTokens: 1024,
  /** An LLM answer longer than this (UTF-8 bytes) fails its delivery unread. */
  maxReplyBytes: 256 * 1024,
  /** `<send>` and `<reply>` elements one LLM answer may hold. */
  maxMessagesPerReply: 20,
  providerPriority: 0,
  providerTimeoutSeconds: 60,
  providerMaxRetries: 3,
  journalMaxAttempts: 3,
  journalRetainDays: 7,
  journalFailedRetainDays: 30,
  maxToolRounds: 8,
  maxToolCallsPerRound: 16,
  mcpTimeoutSeconds: 30,
  /** A remote A2A agent's tries after the first (`max_retries` on an `a2a:` listener), as for LLM providers. */
  remoteA2aMaxRetries: 3,
  retryBackoff: 'exponential',
  retryInitialSeconds: 1,
  retryMaxSeconds: 300,
} as const;

export const RETRY_BACKOFFS = ['exponential', 'fixed'] as const;

export const TOOL_REPLAYS = ['run', 'recorded'] as const;
export const REPLY_FORMATS = ['tools', 'xml'] as const;
export const LLM_RECORD_MODES = ['full', 'metadata', 'off'] as const;
export const MAX_TOKENS_PARAMS = ['max_completion_tokens', 'max_tokens'] as const;

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export const PROVIDER_TYPES = ['mock', 'openai', 'anthropic'] as const;
export const TOKEN_ROLES = ['operator', 'viewer', 'approver'] as const;
export const BUILTIN_LLM = 'builtin:llm';
/** A listener answered by people (issue 25): a message to it is an ask, answered through the inbox. */
export const BUILTIN_HUMAN = 'builtin:human';
/** `handler: a2a:https://host/path` (issue 31): a remote A2A agent answers the listener's deliveries. */
export const A2A_HANDLER_PREFIX = 'a2a:';
