import fc from 'fast-check';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, organismDir, startServer, TOKEN, type ServerProcess } from './processes.js';

/**
 * Fuzz of every route of the OpenAPI document, read from a real `organism serve` process on
 * its SQLite store: numbers in queries and bodies in every form people and programs write
 * (exponent, hex, huge, -0, Infinity, NaN, empty, whitespace, other digits), unknown query
 * parameters, nasty path parameters, bodies and tokens. Every answer is a 2xx or a 4xx JSON
 * error with a detail (naming the parameter when one was wrong), never a 5xx or a stack
 * trace, and the server is alive at the end. FUZZ_RUNS sets the runs per route.
 */
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 20);
const VIEWER = 'fuzz-viewer-token-0123456789';

let server: ServerProcess;
const ids: Record<string, string[]> = {};

interface Param {
  readonly name: string;
  readonly numeric: boolean;
  readonly minimum?: number;
  readonly maximum?: number;
}
interface Route {
  readonly method: string;
  readonly template: string;
  readonly pathParams: readonly string[];
  readonly query: readonly Param[];
  /** The top-level properties of the JSON body, if the route takes one. */
  readonly body: readonly Param[] | null;
}
let routes: Route[] = [];

beforeAll(async () => {
  const dir = organismDir(
    `organism: {name: fuzz}
auth:
  tokens:
    - {name: viewer, token_env: FUZZ_VIEWER_TOKEN, role: viewer}
payloads:
  Note: {fields: {text: string}}
  Job: {fields: {n: integer, score: number, label: string}}
listeners:
  - {name: echo, handler: ./h.ts#echo, payload: Note}
  - {name: worker, handler: ./h.ts#work, payload: Job}
  - {name: broken, handler: ./h.ts#broken, payload: Note}
`,
    { 'h.ts': "export const echo = () => {};\nexport const work = () => {};\nexport const broken = () => { throw new Error('broken on purpose'); };\n" },
  );
  server = await startServer(path.join(dir, 'organism.yaml'), ['--data-dir', path.join(dir, 'data')], { env: { FUZZ_VIEWER_TOKEN: VIEWER } });
  // Real ids, so requests reach the handlers (and the store) rather than stopping at a 404.
  const threads: string[] = [];
  const messages: string[] = [];
  for (const [to, payload] of [
    ['echo', { Note: { text: 'a' } }],
    ['worker', { Job: { n: 1, score: 0.5, label: 'x' } }],
    ['broken', { Note: { text: 'b' } }],
  ] as const) {
    const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to, payload }) });
    const body = (await res.json()) as { threadId: string; messageId: string };
    threads.push(body.threadId);
    messages.push(body.messageId);
  }
  Object.assign(ids, { threadId: threads, otherId: threads, messageId: messages, name: ['echo', 'worker', 'broken'], agentId: ['echo', 'worker'], model: ['mock-1'] });
  routes = readRoutes((await (await server.api('/openapi.json')).json()) as OpenApi);
}, 120_000);
afterAll(() => killAll());

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Array<{ in: string; name: string; schema?: { type?: string; minimum?: number; maximum?: number } }>;
        requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, { type?: string; minimum?: number; maximum?: number }> } }> };
      }
    >
  >;
}

function readRoutes(doc: OpenApi): Route[] {
  const param = (name: string, s: { type?: string; minimum?: number; maximum?: number } = {}): Param => ({
    name,
    numeric: s.type === 'integer' || s.type === 'number',
    ...(s.minimum !== undefined ? { minimum: s.minimum } : {}),
    ...(s.maximum !== undefined ? { maximum: s.maximum } : {}),
  });
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.entries(ops).map(([method, op]) => {
      const properties = op.requestBody?.content?.['application/json']?.schema?.properties;
      return {
        method: method.toUpperCase(),
        template,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => param(p.name, p.schema)),
        body: properties ? Object.entries(properties).map(([name, s]) => param(name, s)) : null,
      };
    }),
  );
}

/** Numbers as text: valid ones and every form a careless or hostile client sends. */
const NUMBER_FORMS = [
  '1e3',
  '1e309',
  '-1e309',
  '1e400',
  '0x10',
  '0b11',
  '0o17',
  '18446744073709551616',
  '9223372036854775808',
  '9'.repeat(40),
  '-0',
  '+5',
  '5.0',
  '2.5',
  '010',
  'Infinity',
  '-Infinity',
  'NaN',
  '',
  ' ',
  '  7',
  '7 ',
  '\t',
  '1_000',
  '1,5',
  '\uff15',
  '\u0663',
  '\u2167',
  '\u00b9',
  '5\u200b',
  '-',
  '.',
  'null',
  'true',
];
const numberText = fc.oneof(fc.constantFrom(...NUMBER_FORMS), fc.nat({ max: 2000 }).map(String), fc.integer().map(String), fc.double().map(String), fc.bigInt().map(String));
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('', ' ', '%', '../..', '\u0000', 'ACKED', 'killed', 'PENDING', '2025-01-01T00:00:00Z', '2025-13-45T99:99:99Z', 'x'.repeat(300), '1e309', 'true'),
);
const UNKNOWN = ['limitt', 'Limit', 'threadID', 'foo', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'limit[]', 'offset.x', 'a__b', '_x', 'token', '\u00e9'];
const tokens = fc.oneof({ arbitrary: fc.constant(TOKEN), weight: 8 }, fc.constant(VIEWER), fc.constant(null), fc.constant('junk'));

/** Whether a query value is a decimal integer within the parameter's bounds (else: 422 naming it). */
function acceptable(p: Param, value: string): boolean {
  if (!/^(0|-?[1-9][0-9]*)$/.test(value) || !Number.isSafeInteger(Number(value))) return false;
  const n = Number(value);
  return (p.minimum === undefined || n >= p.minimum) && (p.maximum === undefined || n <= p.maximum);
}

/**
 * Whether a text query value is refused by name wherever it appears (docs/api.md, "Text the
 * stores keep"): a control character (C0, DEL, C1) or a lone UTF-16 surrogate.
 */
function unstorableQueryText(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
  return /[\u0000-\u001f\u007f-\u009f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
}

interface ErrorBody {
  readonly detail?: unknown;
  readonly code?: unknown;
}

/** One request: a 2xx, or a 4xx JSON error with a non-empty detail and no stack trace. */
async function send(method: string, url: string, token: string | null, body?: { raw: string; type: string }) {
  const res = await fetch(`${server.base}${url}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': body.type } : {}) },
    ...(body ? { body: body.raw } : {}),
  });
  const text = await res.text();
  const shown = `${method} ${url.slice(0, 300)}${body ? ` ${body.raw.slice(0, 200)}` : ''} -> ${res.status} ${text.slice(0, 400)}`;
  expect(res.status, shown).toBeLessThan(500);
  expect(text, shown).not.toMatch(/\n\s+at |SqliteError|\.ts:\d+:\d+/);
  let json: ErrorBody | null = null;
  if (res.status >= 400) {
    json = JSON.parse(text) as ErrorBody;
    expect(typeof json?.detail, shown).toBe('string');
    expect(String(json?.detail).length, shown).toBeGreaterThan(0);
  }
  return { status: res.status, json: json as ErrorBody | null, shown };
}

const fill = (route: Route, pick: (name: string) => string) => route.template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pick(name)));
/** POST /organism/stop and /restart would end the server under test: only refused callers try them. */
const ends = (route: Route) => route.method === 'POST' && /\/organism\/(stop|restart)$/.test(route.template);

describe('fuzz of every route of the real server', () => {
  it('reads the routes from the OpenAPI document, list routes with numeric query parameters among them', () => {
    expect(routes.length).toBeGreaterThan(30);
    const numeric = routes.flatMap((r) => r.query.filter((p) => p.numeric).map((p) => `${r.template}?${p.name}`));
    expect(numeric).toEqual(expect.arrayContaining(['/api/v1/threads?limit', '/api/v1/threads/{threadId}/messages?offset', '/api/v1/journal?limit', '/api/v1/usage/history?offset']));
  });

  it('query strings: numbers in every form and unknown parameters are a 422 naming the parameter', { timeout: 300_000 }, async () => {
    for (const route of routes.filter((r) => !ends(r))) {
      const entry = fc.oneof(
        ...route.query.map((p) => fc.tuple(fc.constant(p), p.numeric ? numberText : nasty)),
        fc.tuple(
          fc.constantFrom(...UNKNOWN).map((name): Param => ({ name, numeric: false })),
          nasty,
        ),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 3 }), fc.nat(), async (entries, seed) => {
          const url = `${fill(route, (name) => ids[name]?.[seed % ids[name]!.length] ?? 'x')}?${entries.map(([p, v]) => `${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`).join('&')}`;
          const { status, json, shown } = await send(route.method, url, TOKEN, route.body ? { raw: '{}', type: 'application/json' } : undefined);
          const known = new Set(route.query.map((p) => p.name));
          const names = entries.map(([p]) => p.name);
          const wrong = entries
            .filter(([p, v]) => !known.has(p.name) || (p.numeric && (!acceptable(p, v) || names.filter((n) => n === p.name).length > 1)) || (!p.numeric && unstorableQueryText(v)))
            .map(([p]) => p.name);
          if (wrong.length > 0) {
            expect(status, shown).toBe(422);
            expect(
              wrong.some((name) => String(json?.detail).includes(name)),
              `${shown}: the detail names none of ${wrong.join(', ')}`,
            ).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
    }
  });

  it('body numbers in every form: a 2xx, or a 4xx naming the field (or the malformed JSON)', { timeout: 300_000 }, async () => {
    // Routes whose body holds a number (at its top level, or inject's payload): a body of only ids
    // and filters (the bulk routes) has no number to send in another form.
    const targets = routes.filter((r) => r.body !== null && !ends(r) && (r.template === '/api/v1/inject' || r.body.some((p) => p.numeric)));
    expect(targets.map((r) => `${r.method} ${r.template}`)).toEqual(expect.arrayContaining(['POST /api/v1/inject', 'PUT /api/v1/usage/threads/{threadId}']));
    const fields: Record<string, string[]> = { inject: ['n', 'score'], other: [] };
    for (const route of targets) {
      const numeric = route.body!.filter((p) => p.numeric).map((p) => p.name);
      await fc.assert(
        fc.asyncProperty(numberText, numberText, fc.boolean(), fc.nat(), async (a, b, quoted, seed) => {
          // A number goes into the body as the raw JSON token (1e309, -0, 0x10, NaN...) or as a string.
          const token = (v: string) => (quoted ? JSON.stringify(v) : v.trim() === '' ? '""' : v);
          let raw: string;
          let named: string[];
          if (route.template === '/api/v1/inject') {
            raw = `{"to":"worker","payload":{"Job":{"n":${token(a)},"score":${token(b)},"label":"x"}}}`;
            named = fields['inject']!;
          } else {
            raw = `{${numeric.map((name) => `${JSON.stringify(name)}:${token(a)}`).join(',')}}`;
            named = numeric;
          }
          const url = fill(route, (name) => ids[name]?.[seed % ids[name]!.length] ?? 'x');
          const { status, json, shown } = await send(route.method, url, TOKEN, { raw, type: 'application/json' });
          // A number sent as a string is never taken for one ("0x10" is not 16).
          if (quoted) expect(status, shown).toBe(422);
          if (status >= 400 && json?.code !== 'MALFORMED_JSON' && json?.code !== 'THREAD_FINISHED' && json?.code !== 'BUDGET_THREAD_FINISHED') {
            const detail = String(json?.detail);
            expect(
              named.some((name) => new RegExp(`\\b${name}\\b`).test(detail)),
              `${shown}: the detail names none of ${named.join(', ')}`,
            ).toBe(true);
          }
        }),
        { numRuns: RUNS * 2 },
      );
    }
  });

  it('anything: nasty paths, methods, queries, bodies and tokens never answer 5xx', { timeout: 300_000 }, async () => {
    const body = fc.option(
      fc.oneof(
        fc.jsonValue().map((v) => ({ raw: JSON.stringify(v) ?? 'null', type: 'application/json' })),
        fc
          .constantFrom('{', '{"to":', '[1,', '{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', 'nul', '{"maxTokens":1e309}', '{"to":"echo","payload":{"Note":{"text":1e400}}}')
          .map((raw) => ({ raw, type: 'application/json' })),
        fc.string().map((raw) => ({ raw, type: 'text/plain' })),
        fc.string().map((raw) => ({ raw, type: 'application/x-www-form-urlencoded' })),
      ),
      { nil: undefined },
    );
    const param = fc.oneof(
      nasty.map((s) => encodeURIComponent(s)),
      fc.constantFrom('echo', 'worker', '%', '%E0%A4%A', 'a/b', '..', '.', 'x'.repeat(500)),
    );
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            method: fc.option(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), { nil: undefined, freq: 4 }),
            params: fc.array(param, { minLength: 3, maxLength: 3 }),
            extra: fc.option(param, { nil: undefined, freq: 6 }),
            query: fc.array(fc.tuple(fc.constantFrom(...route.query.map((p) => p.name), ...UNKNOWN), fc.oneof(nasty, numberText)), { maxLength: 4 }),
            body,
            token: tokens,
          }),
          async (r) => {
            let i = 0;
            let url = route.template.replace(/\{\w+\}/g, () => r.params[i++]!);
            if (r.extra !== undefined) url += `/${r.extra}`;
            if (r.query.length > 0) url += `?${r.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;
            const method = r.method ?? route.method;
            // The routes that end the server only ever see refused callers (viewer: 403, none: 401).
            const token = ends(route) && method === 'POST' ? (r.token === TOKEN ? VIEWER : r.token) : r.token;
            await send(method, url, token, r.body !== undefined && method !== 'GET' ? r.body : undefined);
          },
        ),
        { numRuns: RUNS },
      );
    }
  });

  it('the server is alive at the end', async () => {
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect((await server.api('/organism')).status).toBe(200);
  });
});
