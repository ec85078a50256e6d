import { inTurn, startScriptedServer, type ScriptedReply, type ScriptedServer } from './scripted-server.js';

/** A chat.completions success body as OpenAI sends it. */
export function openAiOk(content: string, usage: Record<string, unknown> = {}, model = 'gpt-4o-mini-2024-07-18') {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, ...usage },
  };
}

/** OpenAI's error body: `{error: {message, type, param, code}}`. */
export function openAiError(message: string, type = 'server_error', code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

export interface OpenAiServerOptions {
  /** The key clients must send as `Authorization: Bearer <key>`; none = no auth (Ollama, vLLM). */
  readonly key?: string;
  /** Path prefix before /chat/completions, e.g. `/v1`. */
  readonly prefix?: string;
  /** Models that refuse `max_tokens`, as OpenAI's reasoning models do. */
  readonly completionTokensOnly?: readonly string[];
  /** Answers to valid requests, in turn (the last repeats). */
  readonly replies: readonly ScriptedReply[];
}

/**
 * Speaks OpenAI's chat completions protocol: checks the URL, the bearer key and the body the
 * way the real API does (404/401/400 with OpenAI's error bodies) before playing the script.
 */
export function startOpenAiServer(opts: OpenAiServerOptions): Promise<ScriptedServer> {
  const next = inTurn(opts.replies);
  return startScriptedServer((req) => {
    if (req.method !== 'POST' || req.path !== `${opts.prefix ?? ''}/chat/completions`) {
      return { status: 404, body: openAiError(`Unknown request URL: ${req.method} ${req.path}.`, 'invalid_request_error', 'unknown_url') };
    }
    if (opts.key !== undefined && req.headers['authorization'] !== `Bearer ${opts.key}`) {
      return { status: 401, body: openAiError('Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key') };
    }
    const b = req.body;
    if (typeof b['model'] !== 'string') return { status: 400, body: openAiError('you must provide a model parameter', 'invalid_request_error') };
    const messages = b['messages'];
    if (!Array.isArray(messages) || messages.length === 0) {
      return { status: 400, body: openAiError("Missing required parameter: 'messages'.", 'invalid_request_error') };
    }
    for (const m of messages as Array<{ role?: unknown; content?: unknown }>) {
      if (!['system', 'user', 'assistant'].includes(String(m.role)) || typeof m.content !== 'string') {
        return { status: 400, body: openAiError('Invalid message in messages.', 'invalid_request_error') };
      }
    }
    if (b['stream'] === true) return { status: 400, body: openAiError('this server does not stream', 'invalid_request_error') };
    if (opts.completionTokensOnly?.includes(b['model']) && 'max_tokens' in b) {
      return {
        status: 400,
        body: openAiError(
          "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          'invalid_request_error',
          'unsupported_parameter',
        ),
      };
    }
    return next();
  });
}
