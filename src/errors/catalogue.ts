/**
 * Every error the product can report, declared once: a stable code, the HTTP status the
 * control service answers with, and the detail template (the spec's texts live here only).
 * Templates use %s placeholders, filled in order by `create(...)`.
 */
export interface ErrorSpec {
  readonly code: string;
  readonly status: number;
  readonly template: string;
}

/** An error the product reports: a stable code, an HTTP status and the detail shown to operators. */
export class OrganismError extends Error {
  readonly code: string;
  readonly status: number;
  /** The detail text shown to operators (spec wording). */
  readonly detail: string;
  /** Optional structured data (e.g. a list of field errors). */
  readonly data: unknown;

  constructor(spec: ErrorSpec, detail: string, data?: unknown) {
    super(detail);
    this.name = 'OrganismError';
    this.code = spec.code;
    this.status = spec.status;
    this.detail = detail;
    this.data = data;
  }

  /** The same error answered with another HTTP status (a route whose status depends on the request). */
  withStatus(status: number): OrganismError {
    return new OrganismError({ code: this.code, status, template: this.detail }, this.detail, this.data);
  }
}

/** Makes one kind of `OrganismError` (an entry of `Errors`). */
export interface ErrorFactory extends ErrorSpec {
  (...args: Array<string | number>): OrganismError;
  /** Build with structured data attached (field errors, config problems, ...). */
  withData(data: unknown, ...args: Array<string | number>): OrganismError;
  /** True when `err` was made by this factory. */
  is(err: unknown): err is OrganismError;
}

export function format(template: string, args: Array<string | number>): string {
  let i = 0;
  return template.replace(/%s/g, () => (i < args.length ? String(args[i++]) : '%s'));
}

function define(code: string, status: number, template: string): ErrorFactory {
  const spec: ErrorSpec = { code, status, template };
  const factory = ((...args: Array<string | number>) => new OrganismError(spec, format(template, args))) as ErrorFactory;
  Object.defineProperties(factory, {
    code: { value: code },
    status: { value: status },
    template: { value: template },
  });
  factory.withData = (data, ...args) => new OrganismError(spec, format(template, args), data);
  factory.is = (err): err is OrganismError => err instanceof OrganismError && err.code === code;
  return factory;
}

/** Every error the product reports, by code: `Errors.X(...)` makes one, `Errors.X.is(err)` tests for it. */
export const Errors = {
  // --- spec texts (control-service.md, Errors) ---
  INVALID_THREAD_STATUS: define('INVALID_THREAD_STATUS', 400, 'Invalid status: %s. Valid values: %s'),
  UNKNOWN_TARGET: define('UNKNOWN_TARGET', 400, 'Unknown target agent: %s'),
  CAPABILITY_NOT_FOUND: define('CAPABILITY_NOT_FOUND', 404, 'Capability not found: %s'),
  AGENT_NOT_FOUND: define('AGENT_NOT_FOUND', 404, 'Agent not found: %s'),
  NOT_EXPOSED: define('NOT_EXPOSED', 404, 'Listener %s is not exposed over %s (set expose.%s: true on it in organism.yaml)'),
  METHOD_NOT_ALLOWED: define('METHOD_NOT_ALLOWED', 405, '%s answers %s only'),
  REMOTE_AGENT_FAILED: define('REMOTE_AGENT_FAILED', 502, 'Remote A2A agent %s: %s'),
  SCHEMA_NOT_FOUND: define('SCHEMA_NOT_FOUND', 404, 'Schema not found for agent: %s'),
  THREAD_NOT_FOUND: define('THREAD_NOT_FOUND', 404, 'Thread not found: %s'),
  BUDGET_NOT_FOUND: define('BUDGET_NOT_FOUND', 404, 'No budget found for thread: %s'),
  BUDGET_BELOW_USAGE: define('BUDGET_BELOW_USAGE', 422, 'Thread %s has already used %s tokens, more than a ceiling of %s: set maxTokens to at least %s, or kill the thread to stop it'),
  BUDGET_THREAD_FINISHED: define('BUDGET_THREAD_FINISHED', 409, 'Thread %s has finished (%s); its budget can no longer change'),
  RELOAD_FAILED: define('RELOAD_FAILED', 500, '%s'),
  RELOAD_FAILED_DEFAULT: define('RELOAD_FAILED_DEFAULT', 500, 'Reload failed'),
  /**
   * A reload of a configuration with problems: nothing was applied; `errors` lists every problem.
   * 500 as the spec's reload rule 7 asks of every reload that does not succeed (the one 5xx a
   * client's input causes); the dry run, our own extension, answers it as 422.
   */
  RELOAD_INVALID: define('RELOAD_INVALID', 500, '%s'),

  // --- decided by the issues ---
  SCHEDULE_NOT_FOUND: define('SCHEDULE_NOT_FOUND', 404, 'Schedule not found: %s'),
  SCHEDULE_EXISTS: define('SCHEDULE_EXISTS', 409, 'A schedule named %s exists already (%s); choose another name or delete it first'),
  SCHEDULE_CONFIGURED: define('SCHEDULE_CONFIGURED', 409, 'Schedule %s is defined in organism.yaml; remove it there (and reload) to delete it'),
  INVALID_SCHEDULE: define('INVALID_SCHEDULE', 400, 'Invalid schedule, %s: %s'),
  INBOX_ITEM_NOT_FOUND: define('INBOX_ITEM_NOT_FOUND', 404, 'Inbox item not found: %s'),
  INBOX_ITEM_CLOSED: define('INBOX_ITEM_CLOSED', 409, 'Inbox item %s is already closed (%s); the first answer won'),
  ASK_REJECTED: define('ASK_REJECTED', 422, '%s rejected the ask (%s): %s'),
  ASK_EXPIRED: define('ASK_EXPIRED', 504, 'Nobody at %s answered the ask within %s s'),
  JOURNAL_ENTRY_NOT_FOUND: define('JOURNAL_ENTRY_NOT_FOUND', 404, 'Journal entry not found: %s'),
  JOURNAL_NOT_REDELIVERABLE: define('JOURNAL_NOT_REDELIVERABLE', 409, 'Journal entry %s is %s; only FAILED entries can be redelivered'),
  THREAD_KILLED: define('THREAD_KILLED', 409, 'Thread %s was killed; it accepts no more messages'),
  THREAD_FINISHED: define('THREAD_FINISHED', 409, 'Thread already finished: %s'),
  /** Issue 30: a hold applies to an unfinished (active or waiting) thread. */
  THREAD_NOT_HOLDABLE: define('THREAD_NOT_HOLDABLE', 409, 'Thread %s is %s: only an active or waiting thread can be held'),
  THREAD_NOT_HELD: define('THREAD_NOT_HELD', 409, 'Thread %s is not held (it is %s): there is nothing to resume'),
  /** Issue 30: erasure waits until the thread ran to its end (completed, error or killed). */
  THREAD_STILL_RUNNING: define('THREAD_STILL_RUNNING', 409, 'Thread %s is %s: kill it or let it finish before erasing it'),
  /** Time travel (issue 29): a fork's atMessageId. */
  FORK_MESSAGE_NOT_IN_THREAD: define('FORK_MESSAGE_NOT_IN_THREAD', 422, 'atMessageId %s is not a message of thread %s'),
  FORK_MESSAGE_NOT_DELIVERABLE: define('FORK_MESSAGE_NOT_DELIVERABLE', 422, 'atMessageId %s is addressed to %s, not a listener of this organism: fork at a message a listener received'),
  FORK_THREAD_EMPTY: define('FORK_THREAD_EMPTY', 409, 'Thread %s has no messages to fork from'),
  FORK_CONFIG_INVALID: define('FORK_CONFIG_INVALID', 422, 'configPath %s is not an organism.yaml this fork can run under: %s'),
  FORK_CONFIG_OUTSIDE: define(
    'FORK_CONFIG_OUTSIDE',
    422,
    "configPath %s is outside %s: a fork runs an organism.yaml from the running organism's directory (its handler modules run in this process)",
  ),
  INVALID_PAYLOAD: define('INVALID_PAYLOAD', 422, 'Invalid %s payload: %s'),
  UNKNOWN_PAYLOAD_TYPE: define('UNKNOWN_PAYLOAD_TYPE', 422, 'Unknown payload type: %s'),
  WRONG_PAYLOAD_TYPE: define('WRONG_PAYLOAD_TYPE', 422, 'Listener %s accepts %s, not %s'),
  PAYLOAD_TYPE_REQUIRED: define('PAYLOAD_TYPE_REQUIRED', 422, 'Listener %s accepts several payload types (%s): name the type, e.g. {"%s": {...}}'),
  ORGANISM_BUSY: define('ORGANISM_BUSY', 503, 'Organism busy: the message queue is full (%s messages); retry later'),
  ORGANISM_NOT_ACCEPTING: define('ORGANISM_NOT_ACCEPTING', 503, 'Organism is %s and accepts no new messages'),
  SERVER_CLOSING: define('SERVER_CLOSING', 503, 'The server is %s; retry in a moment'),
  PEER_DENIED: define('PEER_DENIED', 403, '%s may not send to %s: not a declared peer'),
  HOP_LIMIT: define('HOP_LIMIT', 422, 'Hop limit of %s exceeded in thread %s'),
  HANDLER_TIMEOUT: define('HANDLER_TIMEOUT', 504, 'Handler %s timed out after %s ms'),
  HANDLER_FAILED: define('HANDLER_FAILED', 500, 'Handler %s failed: %s'),
  INVALID_RESULT: define('INVALID_RESULT', 500, 'Handler %s returned an invalid result: %s'),
  BUDGET_EXHAUSTED: define('BUDGET_EXHAUSTED', 429, 'Token budget exhausted for thread %s: %s of %s tokens used, this call needs up to %s'),
  LLM_NO_PROVIDER: define('LLM_NO_PROVIDER', 502, 'No LLM provider serves model %s'),
  LLM_REQUEST_FAILED: define('LLM_REQUEST_FAILED', 502, 'LLM request to %s failed: %s'),
  /** Reasons a single provider request failed (the part after "failed: " in LLM_REQUEST_FAILED). */
  LLM_HTTP_STATUS: define('LLM_HTTP_STATUS', 502, 'HTTP %s: %s'),
  LLM_TIMEOUT: define('LLM_TIMEOUT', 504, 'timed out after %s s'),
  LLM_NETWORK: define('LLM_NETWORK', 502, 'network error: %s'),
  LLM_BAD_RESPONSE: define('LLM_BAD_RESPONSE', 502, 'unreadable response: %s'),
  LLM_INVALID_REPLY: define('LLM_INVALID_REPLY', 502, 'Agent %s produced an invalid reply: %s'),
  LLM_REPLY_TOO_LARGE: define('LLM_REPLY_TOO_LARGE', 502, 'Agent %s got an LLM answer of %s bytes, more than llm.max_reply_bytes (%s); it was not parsed'),
  ABORTED: define('ABORTED', 499, 'Aborted: %s'),
  /** A guardrail (`guards:`) blocked an LLM call's input (no provider was asked) or its answer; the delivery fails with reason `guardrail`. */
  GUARDRAIL_BLOCKED: define('GUARDRAIL_BLOCKED', 422, 'Guard %s blocked the %s of agent %s: %s'),
  LLM_TOOL_ROUNDS_EXCEEDED: define('LLM_TOOL_ROUNDS_EXCEEDED', 502, 'Agent %s used more than %s rounds of tool calls (max_tool_rounds) in one delivery'),
  MCP_UNAVAILABLE: define('MCP_UNAVAILABLE', 502, 'MCP server %s is unavailable: %s'),
  MCP_TOOL_FAILED: define('MCP_TOOL_FAILED', 502, 'MCP tool %s of server %s failed: %s'),
  /** Code tools (an agent's `tools:`): what the model gets back as the tool's error result, and what is recorded. */
  CODE_TOOL_INVALID_INPUT: define('CODE_TOOL_INVALID_INPUT', 422, 'Tool %s was called with invalid arguments: %s'),
  CODE_TOOL_FAILED: define('CODE_TOOL_FAILED', 502, 'Tool %s failed: %s'),
  CODE_TOOL_TIMEOUT: define('CODE_TOOL_TIMEOUT', 504, 'Tool %s timed out after %s s'),
  CODE_TOOL_BAD_RESULT: define('CODE_TOOL_BAD_RESULT', 502, 'Tool %s returned a result that cannot be sent as JSON: %s'),
  CONFIG_INVALID: define('CONFIG_INVALID', 400, 'Configuration is invalid: %s'),

  // --- storage (the data directory) ---
  STORAGE_LOCKED: define('STORAGE_LOCKED', 503, 'Data directory %s is in use by another organism process (pid %s); stop it or use another --data-dir'),
  STORAGE_UNWRITABLE: define('STORAGE_UNWRITABLE', 503, 'Data directory %s is not writable: %s'),
  STORAGE_CORRUPT: define(
    'STORAGE_CORRUPT',
    503,
    'Database %s is not a valid organism database or is damaged (%s): stop the organism and move the file away to start afresh (sqlite3 FILE .recover may salvage its rows)',
  ),
  STORAGE_FAILED: define('STORAGE_FAILED', 503, 'Storage failure in %s: %s'),
  /**
   * A write the store refused for what it holds (a data exception or a constraint: PostgreSQL
   * SQLSTATE classes 22, 23, 54; SQLITE_CONSTRAINT, SQLITE_MISMATCH, SQLITE_TOOBIG): writing it
   * again fails the same way, so nothing retries it (a delivery whose outcome it was fails once).
   */
  STORAGE_REJECTED: define('STORAGE_REJECTED', 422, 'The store %s refused the write: %s (writing it again cannot succeed)'),
  /** A write refused for want of space; injects get it with Retry-After until the disk has room. */
  STORAGE_FULL: define(
    'STORAGE_FULL',
    507,
    'The disk holding %s is full (%s free): free space there; new messages are refused until then, accepted ones are kept and their deliveries resume',
  ),
  /** The database file or its lock was deleted or replaced under the running server. */
  STORAGE_LOST: define('STORAGE_LOST', 503, 'Data directory %s is gone: %s was %s while the server ran; it accepts no new messages, saves what it acknowledged to %s and exits'),
  /**
   * A database server (PostgreSQL) that does not answer: a passing state, unlike STORAGE_FAILED
   * (one operation failed); injects get it with Retry-After until the server is back.
   */
  STORAGE_UNAVAILABLE: define(
    'STORAGE_UNAVAILABLE',
    503,
    'Database %s cannot be reached (%s): new messages are refused until it answers again; accepted ones are kept and their deliveries resume',
  ),
  STORAGE_DATABASE_IN_USE: define('STORAGE_DATABASE_IN_USE', 503, 'Database %s (schema %s) is in use by another organism process; stop it or use another database'),
  /** A cluster process met a schema one process holds (`serve --exclusive`), or the other way round. */
  STORAGE_DATABASE_EXCLUSIVE: define(
    'STORAGE_DATABASE_EXCLUSIVE',
    503,
    'Database %s (schema %s) is held by one organism process alone (serve --exclusive): no worker or other serve may share it; stop that process and run the cluster without --exclusive, or use another database',
  ),
  STORAGE_DATABASE_CLUSTERED: define(
    'STORAGE_DATABASE_CLUSTERED',
    503,
    'Database %s (schema %s) is shared by a cluster of organism processes (serve and worker without --exclusive): one process cannot hold it alone; stop them all first, start this one without --exclusive to join them, or use another database',
  ),

  // --- cluster mode (several processes on one PostgreSQL database) ---
  SHARED_STORE_REQUIRED: define(
    'SHARED_STORE_REQUIRED',
    400,
    '%s needs a shared PostgreSQL store (--store postgres://user@host/db, or ORGANISM_STORE): the embedded SQLite store belongs to one process',
  ),
  WORKER_CONFIG_MISMATCH: define(
    'WORKER_CONFIG_MISMATCH',
    409,
    'This organism.yaml is not the organism the database runs (config hash %s here, %s in the database): %s. Start every process with the organism.yaml the serve processes run',
  ),

  // --- control service (HTTP layer) ---
  AUTH_REQUIRED: define('AUTH_REQUIRED', 401, 'Authentication required'),
  OPERATOR_REQUIRED: define('OPERATOR_REQUIRED', 403, 'Operator role required'),
  APPROVER_REQUIRED: define('APPROVER_REQUIRED', 403, 'Approver or operator role required'),
  AUTH_SCHEME: define('AUTH_SCHEME', 401, 'Authorization must be "Bearer <token>"'),
  AUTH_AMBIGUOUS: define('AUTH_AMBIGUOUS', 400, 'Send one Authorization header, not %s'),

  // --- WebSocket channels (close reasons and command errors) ---
  WS_UNKNOWN_COMMAND: define('WS_UNKNOWN_COMMAND', 400, 'Unknown command: %s'),
  WS_MALFORMED_COMMAND: define('WS_MALFORMED_COMMAND', 400, 'Malformed command: %s'),
  WS_TOO_MANY_CONNECTIONS: define('WS_TOO_MANY_CONNECTIONS', 503, 'Too many connections (limit %s)'),
  WS_TOO_MANY_FROM_IP: define('WS_TOO_MANY_FROM_IP', 429, 'Too many connections from %s (limit %s)'),
  WS_TOO_MANY_HANDSHAKES: define('WS_TOO_MANY_HANDSHAKES', 429, 'Too many WebSocket handshakes in progress from %s (limit %s): retry shortly'),
  WS_TOO_SLOW: define('WS_TOO_SLOW', 503, 'Client too slow: send buffer stayed over %s bytes for %s ms'),
  WS_UNRESPONSIVE: define('WS_UNRESPONSIVE', 408, 'No pong for %s pings'),
  WS_SHUTDOWN: define('WS_SHUTDOWN', 503, 'Server shutting down'),
  WS_INJECT_NEEDS_TARGET: define('WS_INJECT_NEEDS_TARGET', 400, 'inject needs "to": the name of the target listener'),
  WS_INJECT_ON_MESSAGES: define('WS_INJECT_ON_MESSAGES', 400, 'inject is only available on /ws'),
  WS_INJECT_FAILED: define('WS_INJECT_FAILED', 500, 'Inject failed: %s'),
  WS_SNAPSHOT_FAILED: define('WS_SNAPSHOT_FAILED', 500, 'Snapshot failed: %s'),
  WS_BAD_FILTER: define('WS_BAD_FILTER', 400, 'Invalid filter: %s'),
  /** A request parameter or body field out of bounds or of the wrong type; the text names it and the bound. */
  INVALID_REQUEST: define('INVALID_REQUEST', 422, '%s'),
  BULK_SELECTION: define('BULK_SELECTION', 422, 'Give %s (the ones to act on) or filter (every match of the list filter): got %s'),
  INVALID_TIME: define('INVALID_TIME', 422, '%s must be an ISO 8601 date or time (e.g. 2025-01-31T12:00:00Z), not: %s'),
  INVALID_TIME_RANGE: define('INVALID_TIME_RANGE', 422, 'startTime (%s) must not be after endTime (%s)'),
  ROUTE_NOT_FOUND: define('ROUTE_NOT_FOUND', 404, 'Not found: %s %s'),
  MALFORMED_JSON: define('MALFORMED_JSON', 400, 'Malformed JSON body: %s'),
  BODY_TOO_LARGE: define('BODY_TOO_LARGE', 413, 'Request body is larger than %s bytes'),
  UNSUPPORTED_MEDIA_TYPE: define('UNSUPPORTED_MEDIA_TYPE', 415, 'Unsupported content type: %s (send application/json)'),
  BAD_REQUEST: define('BAD_REQUEST', 400, 'Bad request: %s'),
  /** Refusals of Node's HTTP parser, before any route runs. */
  MALFORMED_HTTP: define('MALFORMED_HTTP', 400, 'Malformed HTTP request: %s'),
  HEADERS_TOO_LARGE: define(
    'HEADERS_TOO_LARGE',
    431,
    "The request line and headers are larger than %s bytes, the server's limit: send a shorter URL (fewer or shorter query parameters) or smaller headers",
  ),
  REQUEST_TIMEOUT: define('REQUEST_TIMEOUT', 408, 'The request did not arrive in time: send its headers and body without pausing'),
  EXPECTATION_FAILED: define('EXPECTATION_FAILED', 417, 'Expect: %s is not supported (only 100-continue is)'),
  FORBIDDEN_JSON_KEY: define('FORBIDDEN_JSON_KEY', 400, 'JSON key %s is not allowed (at %s): it could change object prototypes; rename or remove it'),
  OTLP_PROTOCOL_UNSUPPORTED: define('OTLP_PROTOCOL_UNSUPPORTED', 400, 'OTLP protocol %s (from %s) is not supported: use http/protobuf or http/json'),
  INTERNAL_ERROR: define('INTERNAL_ERROR', 500, 'Internal server error'),
  RELOAD_NO_SOURCE: define('RELOAD_NO_SOURCE', 500, 'Reload failed: the organism was not loaded from a configuration file'),
  RESTART_UNAVAILABLE: define('RESTART_UNAVAILABLE', 501, 'Restart is not available: the server runs without a supervisor'),

  // --- test kit (organism/testing): a test's own mistakes, named for its author ---
  TEST_SCRIPT_NO_AGENT: define('TEST_SCRIPT_NO_AGENT', 400, 'no scripted reply for agent "%s" (the script answers %s)'),
  TEST_SCRIPT_EMPTY: define('TEST_SCRIPT_EMPTY', 400, 'the script of agent "%s" is an empty list of replies'),
  TEST_SCRIPT_CALLS_IN_XML: define(
    'TEST_SCRIPT_CALLS_IN_XML',
    400,
    'the scripted reply of agent "%s" makes tool calls, but the agent answers in the xml reply format (no tools are offered): answer with XML text or send()/reply()',
  ),
  TEST_SCRIPT_TYPE_NEEDED: define('TEST_SCRIPT_TYPE_NEEDED', 400, 'the scripted reply of agent "%s" sends to %s, %s: name the type, %s'),
  TEST_THREAD_NOT_SETTLED: define('TEST_THREAD_NOT_SETTLED', 408, 'thread %s did not settle within %s ms (status %s; %s)'),
  TEST_HANDLER_NO_LLM: define('TEST_HANDLER_NO_LLM', 400, 'the handler called ctx.llm, but the test gave no llm: pass createHandlerContext({llm: scripted({%s: ...})})'),
} as const;

/** The code of an error of the catalogue. */
export type ErrorCode = keyof typeof Errors;
