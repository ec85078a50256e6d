/** A small HTTP client for the control API that reports transport failures by their code. */
import { Agent, request } from 'node:http';

export type Answer =
  | { readonly ok: true; readonly status: number; readonly headers: Headers; readonly body: unknown; readonly ms: number }
  | { readonly ok: false; readonly error: string; readonly ms: number };

class Timeout extends Error {
  readonly code = 'TIMEOUT';
}

/**
 * Kept-alive connections, as a client would use them, but closed after 250 ms idle: a worker
 * that restarts lets open connections finish for up to 2 s, and pooled connections the harness
 * no longer used made every graceful restart wait that long. node:http rather than fetch: the
 * harness makes hundreds of requests per cycle, and fetch cost ~3x the CPU per request.
 */
const agent = new Agent({ keepAlive: true, timeout: 250 });

export class Api {
  private readonly host: string;
  private readonly port: number;

  constructor(
    readonly base: string,
    private readonly token: string,
  ) {
    const url = new URL(base);
    this.host = url.hostname;
    this.port = Number(url.port);
  }

  request(method: string, path: string, body?: unknown, timeoutMs = 15_000): Promise<Answer> {
    const started = performance.now();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve) => {
      let settled = false;
      const done = (a: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(a);
      };
      const fail = (err: NodeJS.ErrnoException) => done({ ok: false, error: err.code ?? err.message, ms: performance.now() - started });
      const headers: Record<string, string | number> = { authorization: `Bearer ${this.token}` };
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      const req = request({ host: this.host, port: this.port, method, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: kept as text
          }
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          done({ ok: true, status: res.statusCode ?? 0, headers: h, body: parsed, ms: performance.now() - started });
        });
      });
      const timer = setTimeout(() => req.destroy(new Timeout('timed out')), timeoutMs);
      req.on('error', fail);
      req.end(payload);
    });
  }

  /** A 2xx answer's body, else an error naming the route and what came back. */
  async json<T>(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<T> {
    const a = await this.request(method, path, body, timeoutMs);
    if (!a.ok) throw new Error(`${method} ${path}: ${a.error}`);
    if (a.status < 200 || a.status > 299) throw new ApiError(method, path, a.status, a.body);
    return a.body as T;
  }
}

export class ApiError extends Error {
  constructor(
    method: string,
    path: string,
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`${method} ${path}: ${status} ${JSON.stringify(body).slice(0, 300)}`);
  }
}
