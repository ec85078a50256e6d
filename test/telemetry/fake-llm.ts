import { createServer, type Server } from 'node:http';

/** What the fake OpenAI-compatible server answers for a model. */
export interface FakeModel {
  /** Fail this many requests first (500 with Retry-After: 0). */
  readonly failFirst?: number;
  /** Always answer 400 (a non-retryable failure). */
  readonly reject?: boolean;
  readonly content: string;
  readonly usage: { prompt: number; completion: number; cached?: number; reasoning?: number };
}

export interface FakeLlm {
  readonly url: string;
  readonly requests: Array<{ model: string; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** A real HTTP server speaking OpenAI chat completions, scripted per model. */
export async function startFakeLlm(models: Record<string, FakeModel>): Promise<FakeLlm> {
  const requests: FakeLlm['requests'] = [];
  const failures = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      const model = String(body['model']);
      requests.push({ model, body });
      const script = models[model];
      const failed = failures.get(model) ?? 0;
      if (!script || script.reject) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `no such model ${model}` } }));
        return;
      }
      if (failed < (script.failFirst ?? 0)) {
        failures.set(model, failed + 1);
        res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify({ error: { message: 'overloaded' } }));
        return;
      }
      const u = script.usage;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: `${model}-2026`,
          choices: [{ message: { role: 'assistant', content: script.content }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: u.prompt,
            completion_tokens: u.completion,
            total_tokens: u.prompt + u.completion,
            ...(u.cached !== undefined ? { prompt_tokens_details: { cached_tokens: u.cached } } : {}),
            ...(u.reasoning !== undefined ? { completion_tokens_details: { reasoning_tokens: u.reasoning } } : {}),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Parses Prometheus text into `name{labels}` -> value (labels as written, sorted). */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = m[3]
      ? [...m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
          .map((l) => `${l[1]}="${l[2]}"`)
          .sort()
          .join(',')
      : '';
    out.set(labels ? `${m[1]}{${labels}}` : m[1]!, Number(m[4]));
  }
  return out;
}
