import { inTurn, startScriptedServer, type ScriptedReply, type ScriptedServer, type SseEvent } from './scripted-server.js';

type Block = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown } | { type: 'thinking'; thinking: string; signature: string };

/** A Messages API success body as Anthropic sends it; `tool_use` blocks make stop_reason `tool_use`. */
export function anthropicOk(text: string | Array<Record<string, unknown>>, usage: Record<string, unknown> = {}) {
  const content = typeof text === 'string' ? [{ type: 'text', text }] : text;
  return {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-20250514',
    content,
    stop_reason: content.some((b) => b['type'] === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 50, output_tokens: 10, ...usage },
  };
}

/** Anthropic's error body: `{type: "error", error: {type, message}}`. */
export function anthropicError(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/**
 * A message as Anthropic streams it: message_start (input usage), per block content_block_start,
 * text_delta / input_json_delta fragments and content_block_stop, then message_delta
 * (stop_reason, cumulative output_tokens) and message_stop. A tool_use block whose `input` is a
 * string streams that text as its JSON (to play a model that writes broken JSON).
 */
export function anthropicEvents(message: ReturnType<typeof anthropicOk>): SseEvent[] {
  const ev = (type: string, data: Record<string, unknown>): SseEvent => ({ event: type, data: { type, ...data } });
  const { usage } = message;
  const events: SseEvent[] = [ev('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }), ev('ping', {})];
  (message.content as unknown as Block[]).forEach((block, index) => {
    if (block.type === 'text') {
      events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const p of pieces(block.text, 4)) events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
    } else if (block.type === 'thinking') {
      events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } }));
      events.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } }));
      events.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
    } else {
      events.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      const json = typeof block.input === 'string' ? block.input : JSON.stringify(block.input);
      for (const p of pieces(json, 7)) events.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } }));
    }
    events.push(ev('content_block_stop', { index }));
  });
  events.push(ev('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }));
  events.push(ev('message_stop', {}));
  return events;
}

export interface AnthropicServerOptions {
  /** The key clients must send as `x-api-key`; none = not checked. */
  readonly key?: string;
  /** Answers to valid requests, in turn (the last repeats). */
  readonly replies: readonly ScriptedReply[];
}

/** Checks messages and tools as the API does; the error text or null. */
function invalidBody(b: Record<string, unknown>): string | null {
  const messages = b['messages'];
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  const list = messages as Array<{ role?: unknown; content?: unknown }>;
  const roles = list.map((m) => String(m.role));
  if (roles.some((r) => r !== 'user' && r !== 'assistant')) {
    return 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.';
  }
  if (roles[0] !== 'user') return 'messages: first message must use the "user" role';
  let expected: Set<string> | null = null;
  for (const [i, m] of list.entries()) {
    if (i > 0 && roles[i] === roles[i - 1]) return `messages: roles must alternate between "user" and "assistant", but found multiple "${roles[i]}" roles in a row`;
    const blocks = typeof m.content === 'string' ? [] : Array.isArray(m.content) ? (m.content as Array<Record<string, unknown>>) : null;
    if (blocks === null) return `messages.${i}.content: Input should be a valid list`;
    if (expected) {
      const answered = new Set(blocks.filter((c) => c['type'] === 'tool_result').map((c) => String(c['tool_use_id'])));
      const missing = [...expected].filter((id) => !answered.has(id));
      if (missing.length > 0)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      const firstOther = blocks.findIndex((c) => c['type'] !== 'tool_result');
      if (firstOther >= 0 && blocks.slice(firstOther).some((c) => c['type'] === 'tool_result')) return `messages.${i}: tool_result blocks must come first in the user message`;
      expected = null;
    }
    if (roles[i] === 'assistant') {
      const uses = blocks.filter((c) => c['type'] === 'tool_use');
      for (const u of uses)
        if (typeof u['input'] !== 'object' || u['input'] === null || Array.isArray(u['input'])) return `messages.${i}.content: tool_use.input: Input should be a valid dictionary`;
      if (uses.length > 0) expected = new Set(uses.map((u) => String(u['id'])));
    } else if (blocks.some((c) => c['type'] === 'tool_result') && i > 0 && !blocks.every((c) => c['type'] !== 'tool_result' || typeof c['tool_use_id'] === 'string')) {
      return `messages.${i}: tool_result needs tool_use_id`;
    }
  }
  if (expected) return 'messages: the final `tool_use` blocks have no `tool_result` (the last message must be from the user)';
  const tools = b['tools'];
  if (tools !== undefined) {
    if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
    for (const [i, t] of (tools as Array<{ name?: unknown; input_schema?: { type?: unknown } }>).entries()) {
      if (typeof t.name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(t.name)) return `tools.${i}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
      if (t.input_schema?.type !== 'object') return `tools.${i}.input_schema: Input should be an object schema`;
    }
  } else if (list.some((m) => Array.isArray(m.content) && (m.content as Array<{ type?: unknown }>).some((c) => c.type === 'tool_use' || c.type === 'tool_result'))) {
    return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  }
  return null;
}

/**
 * Speaks Anthropic's Messages API: checks the URL, `x-api-key`, `anthropic-version` and the
 * body (max_tokens required, no system role in messages, user first, alternating roles,
 * tool_use answered by tool_result right after) the way the real API does, answering with its
 * error bodies, before playing the script. Success bodies are streamed as events when the
 * client asks for `stream: true`.
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
    const problem = invalidBody(b);
    if (problem) return invalid(problem);
    const reply = next();
    const isMessage = (reply.status ?? 200) === 200 && !reply.events && !reply.rawBody && (reply.body as { type?: unknown } | undefined)?.type === 'message';
    if (b['stream'] === true && isMessage) return { ...reply, body: undefined, events: anthropicEvents(reply.body as ReturnType<typeof anthropicOk>) };
    return reply;
  });
}
