/** A small HTTP client for the control API that reports transport failures by their code. */

export type Answer =
  | { readonly ok: true; readonly status: number; readonly headers: Headers; readonly body: unknown; readonly ms: number }
  | { readonly ok: false; readonly error: string; readonly ms: number };

/** ECONNREFUSED, ECONNRESET, TIMEOUT, ...: what went wrong below HTTP. */
function transportError(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string; name?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.cause?.name === 'TimeoutError') return 'TIMEOUT';
  const code = e.cause?.code ?? e.code;
  if (code === 'UND_ERR_SOCKET') return 'ECONNRESET'; // the other side closed the connection
  return code ?? e.cause?.message ?? String(err);
}

export class Api {
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  async request(method: string, path: string, body?: unknown, timeoutMs = 15_000): Promise<Answer> {
    const started = performance.now();
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      return { ok: true, status: res.status, headers: res.headers, body: parsed, ms: performance.now() - started };
    } catch (err) {
      return { ok: false, error: transportError(err), ms: performance.now() - started };
    }
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
