import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer: status, JSON body, headers, and an optional delay before answering. */
export interface ScriptedReply {
  readonly status?: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  readonly delayMs?: number;
}

export interface SeenRequest {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

/**
 * A local HTTP server that answers like a provider's API from a script (one reply per request;
 * the last one repeats). It records every request, and whether a client went away mid-answer.
 */
export async function startProtocolServer(script: ScriptedReply[]) {
  const seen: SeenRequest[] = [];
  let aborted = 0;
  let i = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') });
      const reply = script[Math.min(i++, script.length - 1)]!;
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
        res.end(JSON.stringify(reply.body));
      };
      if (reply.delayMs) {
        const timer = setTimeout(send, reply.delayMs);
        res.on('close', () => {
          if (!res.writableEnded) {
            aborted++;
            clearTimeout(timer);
          }
        });
      } else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    get aborted() {
      return aborted;
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A chat.completions success body as OpenAI sends it. */
export function openAiOk(content: string, usage: Record<string, unknown> = {}) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    model: 'gpt-4o-mini-2024-07-18',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, ...usage },
  };
}

export function openAiError(message: string, type = 'server_error') {
  return { error: { message, type, code: null } };
}

/** A Messages API success body as Anthropic sends it. */
export function anthropicOk(text: string, usage: Record<string, unknown> = {}) {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-20250514',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 50, output_tokens: 10, ...usage },
  };
}

export function anthropicError(type: string, message: string) {
  return { type: 'error', error: { type, message } };
}
