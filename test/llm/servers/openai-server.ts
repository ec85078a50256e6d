import { inTurn, startScriptedServer, type ScriptedReply, type ScriptedServer, type SeenRequest, type SseEvent } from './scripted-server.js';

/** A chat.completions success body as OpenAI sends it; `toolCalls` adds `tool_calls` (finish_reason `tool_calls`). */
export function openAiOk(
  content: string | null,
  usage: Record<string, unknown> = {},
  model = 'gpt-4o-mini-2024-07-18',
  toolCalls: ReadonlyArray<{ id: string; name: string; arguments: string }> = [],
) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
        },
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, ...usage },
  };
}

/** OpenAI's error body: `{error: {message, type, param, code}}`. */
export function openAiError(message: string, type = 'server_error', code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

/** Text in pieces of a few characters, as a model streams it. */
export function pieces(text: string, size = 4): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/**
 * A chat completion as OpenAI streams it: a role chunk, content deltas, each tool call's id and
 * name then its arguments in fragments (by `index`), the finish_reason chunk, a usage chunk with
 * empty `choices` when `include_usage` was asked, then `[DONE]`.
 */
export function openAiChunks(completion: ReturnType<typeof openAiOk>, includeUsage: boolean): SseEvent[] {
  const base = { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model };
  const choice = completion.choices[0]!;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ data: { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] } });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '' })];
  for (const p of pieces(choice.message.content ?? '')) events.push(chunk({ content: p }));
  const calls = (choice.message as { tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> }).tool_calls ?? [];
  calls.forEach((c, index) => {
    events.push(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
    for (const p of pieces(c.function.arguments, 7)) events.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  events.push(chunk({}, choice.finish_reason));
  if (includeUsage) events.push({ data: { ...base, choices: [], usage: completion.usage } });
  events.push({ data: '[DONE]' });
  return events;
}

export interface OpenAiServerOptions {
  /** The key clients must send as `Authorization: Bearer <key>`; none = no auth (Ollama, vLLM). */
  readonly key?: string;
  /** Path prefix before /chat/completions, e.g. `/v1`. */
  readonly prefix?: string;
  /** Models that refuse `max_tokens`, as OpenAI's reasoning models do. */
  readonly completionTokensOnly?: readonly string[];
  /** false: answers whole JSON bodies even when asked to stream (some compatible servers). Default true. */
  readonly streams?: boolean;
  /** Answers to valid requests, in turn (the last repeats). */
  readonly replies: readonly ScriptedReply[];
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Checks messages and tools the way the API does; the error text, or null when valid. */
function invalidBody(b: Record<string, unknown>): string | null {
  const messages = b['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return "Missing required parameter: 'messages'.";
  let open: Set<string> | null = null; // tool_call ids still waiting for their tool message
  for (const [i, m] of (messages as Array<Record<string, unknown>>).entries()) {
    const role = String(m['role']);
    if (open && open.size > 0 && role !== 'tool')
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message at messages[${i}])`;
    if (role === 'tool') {
      const id = m['tool_call_id'];
      if (typeof id !== 'string' || !open?.has(id)) return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[${i}])`;
      if (typeof m['content'] !== 'string') return `Invalid type for 'messages[${i}].content'.`;
      open.delete(id);
      continue;
    }
    if (!['system', 'user', 'assistant'].includes(role)) return `Invalid value: '${role}' (messages[${i}].role)`;
    const calls = m['tool_calls'];
    if (role === 'assistant' && Array.isArray(calls)) {
      if (m['content'] !== null && typeof m['content'] !== 'string') return `Invalid type for 'messages[${i}].content'.`;
      open = new Set();
      for (const c of calls as Array<{ id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } }>) {
        if (typeof c.id !== 'string' || c.type !== 'function' || typeof c.function?.name !== 'string' || typeof c.function.arguments !== 'string') {
          return `Invalid 'messages[${i}].tool_calls': each needs id, type "function" and function {name, arguments (a string)}.`;
        }
        open.add(c.id);
      }
      continue;
    }
    if (typeof m['content'] !== 'string') return 'Invalid message in messages.';
  }
  if (open && open.size > 0) return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.";
  const tools = b['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return "Invalid type for 'tools': expected an array.";
    for (const [i, t] of (tools as Array<{ type?: unknown; function?: { name?: unknown; parameters?: unknown } }>).entries()) {
      if (t.type !== 'function' || typeof t.function?.name !== 'string') return `Missing required parameter: 'tools[${i}].function'.`;
      if (!TOOL_NAME.test(t.function.name)) return `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`;
      if (t.function.parameters !== undefined && (typeof t.function.parameters !== 'object' || (t.function.parameters as { type?: unknown }).type !== 'object')) {
        return `Invalid schema for function '${t.function.name}': schema must be a JSON Schema of 'type: "object"'.`;
      }
    }
  }
  return null;
}

/**
 * Speaks OpenAI's chat completions protocol: checks the URL, the bearer key and the body the
 * way the real API does (404/401/400 with OpenAI's error bodies, tool calls and tool messages
 * included) before playing the script. Success bodies are streamed as chunks when the client
 * asks for `stream: true`; scripted `events` are sent as they are.
 */
export function startOpenAiServer(opts: OpenAiServerOptions): Promise<ScriptedServer> {
  const next = inTurn(opts.replies);
  return startScriptedServer((req: SeenRequest) => {
    if (req.method !== 'POST' || req.path !== `${opts.prefix ?? ''}/chat/completions`) {
      return { status: 404, body: openAiError(`Unknown request URL: ${req.method} ${req.path}.`, 'invalid_request_error', 'unknown_url') };
    }
    if (opts.key !== undefined && req.headers['authorization'] !== `Bearer ${opts.key}`) {
      return { status: 401, body: openAiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key') };
    }
    const b = req.body;
    if (typeof b['model'] !== 'string') return { status: 400, body: openAiError('you must provide a model parameter', 'invalid_request_error') };
    const invalid = invalidBody(b);
    if (invalid) return { status: 400, body: openAiError(invalid, 'invalid_request_error') };
    if (b['stream_options'] !== undefined && b['stream'] !== true) {
      return { status: 400, body: openAiError("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'invalid_request_error') };
    }
    if (opts.completionTokensOnly?.includes(b['model']) && 'max_tokens' in b) {
      return {
        status: 400,
        body: openAiError("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", 'invalid_request_error', 'unsupported_parameter'),
      };
    }
    const reply = next();
    const isCompletion = (reply.status ?? 200) === 200 && !reply.events && !reply.rawBody && (reply.body as { object?: unknown } | undefined)?.object === 'chat.completion';
    if (b['stream'] === true && opts.streams !== false && isCompletion) {
      const includeUsage = (b['stream_options'] as { include_usage?: unknown } | undefined)?.include_usage === true;
      return { ...reply, body: undefined, events: openAiChunks(reply.body as ReturnType<typeof openAiOk>, includeUsage) };
    }
    return reply;
  });
}
