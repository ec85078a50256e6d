import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One server-sent event: `event:` name (optional) and `data:` (a JSON value, or a raw string). */
export interface SseEvent {
  readonly event?: string;
  readonly data: unknown;
}

/**
 * One answer: status, JSON body (or raw text), headers, and an optional delay before answering.
 * `events` answers as an event stream instead (`text/event-stream`); with `hang` the stream
 * stays open after its events, until the client goes away (a model still writing).
 */
export interface ScriptedReply {
  readonly status?: number;
  readonly body?: unknown;
  readonly rawBody?: string;
  readonly headers?: Record<string, string>;
  readonly delayMs?: number;
  readonly events?: readonly SseEvent[];
  readonly hang?: boolean;
}

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

export interface ScriptedServer {
  readonly url: string;
  /** Every request, in arrival order. */
  readonly seen: SeenRequest[];
  /** Requests whose client went away before the answer was sent. */
  readonly closedEarly: number;
  close(): Promise<void>;
}

/**
 * A local HTTP server on 127.0.0.1 that answers each request with what `answer` returns. It
 * records the requests, and counts clients that closed the connection before their answer.
 */
export async function startScriptedServer(answer: (req: SeenRequest) => ScriptedReply): Promise<ScriptedServer> {
  const seen: SeenRequest[] = [];
  let closedEarly = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown>;
      } catch {
        // leave it empty: the protocol servers answer 400 for it
      }
      const request: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      seen.push(request);
      const reply = answer(request);
      const send = () => {
        if (res.destroyed) return;
        if (reply.events) {
          res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...(reply.headers ?? {}) });
          for (const e of reply.events) {
            const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
            res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${data}\n\n`);
          }
          if (!reply.hang) res.end();
          return;
        }
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
        res.end(reply.rawBody ?? JSON.stringify(reply.body ?? {}));
      };
      let timer: NodeJS.Timeout | null = null;
      res.on('close', () => {
        if (res.writableEnded) return;
        closedEarly++;
        if (timer) clearTimeout(timer);
      });
      if (!reply.delayMs) return send();
      timer = setTimeout(send, reply.delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    get closedEarly() {
      return closedEarly;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Plays `script` one reply per accepted request; the last reply repeats. */
export function inTurn(script: readonly ScriptedReply[]): () => ScriptedReply {
  let i = 0;
  return () => script[Math.min(i++, script.length - 1)]!;
}
