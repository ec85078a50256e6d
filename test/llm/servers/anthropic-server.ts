import { inTurn, startScriptedServer, type ScriptedReply, type ScriptedServer } from './scripted-server.js';

/** A Messages API success body as Anthropic sends it. */
export function anthropicOk(text: string | Array<Record<string, unknown>>, usage: Record<string, unknown> = {}) {
  return {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-20250514',
    content: typeof text === 'string' ? [{ type: 'text', text }] : text,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 50, output_tokens: 10, ...usage },
  };
}

/** Anthropic's error body: `{type: "error", error: {type, message}}`. */
export function anthropicError(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}

export interface AnthropicServerOptions {
  /** The key clients must send as `x-api-key`; none = not checked. */
  readonly key?: string;
  /** Answers to valid requests, in turn (the last repeats). */
  readonly replies: readonly ScriptedReply[];
}

/**
 * Speaks Anthropic's Messages API: checks the URL, `x-api-key`, `anthropic-version` and the
 * body (max_tokens required, no system role in messages, user first) the way the real API
 * does, answering with its error bodies, before playing the script.
 */
export function startAnthropicServer(opts: AnthropicServerOptions): Promise<ScriptedServer> {
  const next = inTurn(opts.replies);
  const invalid = (message: string): ScriptedReply => ({ status: 400, body: anthropicError('invalid_request_error', message) });
  return startScriptedServer((req) => {
    if (req.method !== 'POST' || req.path !== '/v1/messages') return { status: 404, body: anthropicError('not_found_error', 'Not found') };
    if (opts.key !== undefined && req.headers['x-api-key'] !== opts.key) {
      return { status: 401, body: anthropicError('authentication_error', 'invalid x-api-key') };
    }
    if (!req.headers['anthropic-version']) return invalid('anthropic-version: header is required');
    const b = req.body;
    if (typeof b['model'] !== 'string') return invalid('model: Field required');
    if (typeof b['max_tokens'] !== 'number') return invalid('max_tokens: Field required');
    const messages = b['messages'];
    if (!Array.isArray(messages) || messages.length === 0) return invalid('messages: at least one message is required');
    const roles = (messages as Array<{ role?: unknown }>).map((m) => String(m.role));
    if (roles.some((r) => r !== 'user' && r !== 'assistant')) {
      return invalid('messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.');
    }
    if (roles[0] !== 'user') return invalid('messages: first message must use the "user" role');
    return next();
  });
}
