import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR, startService, VIEWER, type Service } from './fixture.js';
import { ROUTES } from './route-table.js';

let svc: Service;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
});

const QUERY_KEYS = [
  'limit', 'offset', 'status', 'agent', 'threadId', 'thread_id', 'state', 'dryRun', 'dry_run',
  'startTime', 'start_time', 'endTime', 'end_time', 'orgId', 'org_id', 'agentId', 'model', 'token', '__proto__', 'constructor',
];

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('', '-1', '0', '101', '1e3', '2.5', 'NaN', 'null', 'true', '9'.repeat(40), '%', '%zz', '../..', '\u0000', 'ACKED', 'killed',
    '2025-01-01', '2025-13-45T99:99:99Z', '2025-01-01T00:00:00Z', 'x'.repeat(300)),
  fc.integer().map(String),
  fc.double().map(String),
);

/** A path parameter: usually encoded, sometimes raw (bad percent-encoding, slashes, dots). */
const param = fc.oneof(
  nasty.map((s) => encodeURIComponent(s)),
  fc.constantFrom('echo', 'greeter', 'slow', 'mock-small', '%', '%E0%A4%A', 'a/b', '..', '.', 'x'.repeat(500)),
);

const query = fc.array(fc.tuple(fc.constantFrom(...QUERY_KEYS), nasty), { maxLength: 5 }).map((pairs) =>
  pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`,
);

/** Bodies close to valid ones reach the deeper layers (payload validation, budgets). */
const nearlyValid = fc.oneof(
  fc.record({
    to: fc.constantFrom('echo', 'greeter', 'broken', 'shouter'),
    payload: fc.oneof(
      fc.record({ Text: fc.record({ text: fc.oneof(fc.string(), fc.jsonValue()) }, { requiredKeys: [] }) }),
      fc.record({ Greeting: fc.record({ name: fc.jsonValue(), times: fc.jsonValue(), extra: fc.jsonValue() }, { requiredKeys: [] }) }),
      fc.record({ text: fc.jsonValue() }),
      fc.dictionary(fc.constantFrom('Text', 'Greeting', 'Nope', 'SystemError', ''), fc.jsonValue()),
    ),
    threadId: fc.option(fc.oneof(fc.string({ minLength: 1 }), fc.constantFrom('t-1', 'killed-thread')), { nil: undefined }),
    metadata: fc.option(fc.record({ orgId: fc.string(), userId: fc.string() }, { requiredKeys: [] }), { nil: undefined }),
  }),
  fc.record({ maxTokens: fc.oneof(fc.integer(), fc.integer({ min: 0, max: 10 ** 9 }), fc.double()) }),
);

const jsonBody = fc.oneof(
  nearlyValid,
  nearlyValid,
  fc.jsonValue(),
  fc.record(
    {
      to: fc.oneof(nasty, fc.constantFrom('echo', 'greeter', 'broken'), fc.jsonValue()),
      payload: fc.oneof(fc.jsonValue(), fc.record({ Text: fc.record({ text: fc.jsonValue() }) }), fc.dictionary(fc.string(), fc.jsonValue())),
      threadId: fc.oneof(nasty, fc.jsonValue()),
      thread_id: nasty,
      metadata: fc.oneof(fc.jsonValue(), fc.record({ orgId: fc.jsonValue(), org_id: nasty, userId: nasty })),
      maxTokens: fc.oneof(fc.integer(), fc.double(), nasty, fc.jsonValue()),
      max_tokens: fc.oneof(fc.integer(), nasty),
    },
    { requiredKeys: [] },
  ),
).map((v) => ({ raw: JSON.stringify(v) ?? 'null', type: 'application/json' }));

const rawBody = fc.oneof(
  fc.string().map((raw) => ({ raw, type: 'application/json' })),
  fc.constantFrom('{', '{"to":', '[1,', '{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', 'nul').map((raw) => ({ raw, type: 'application/json' })),
  fc.string().map((raw) => ({ raw, type: 'text/plain' })),
  fc.string().map((raw) => ({ raw, type: 'application/x-www-form-urlencoded' })),
  fc.string().map((raw) => ({ raw, type: 'application/octet-stream' })),
);

const body = fc.option(fc.oneof({ arbitrary: jsonBody, weight: 3 }, { arbitrary: rawBody, weight: 1 }), { nil: undefined });

const request = fc.record({
  method: fc.option(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), { nil: undefined, freq: 4 }),
  params: fc.array(param, { minLength: 3, maxLength: 3 }),
  extraSegment: fc.option(param, { nil: undefined, freq: 6 }),
  query,
  body,
  // Mostly the operator, so requests get past auth into the routes.
  token: fc.oneof({ arbitrary: fc.constant(OPERATOR), weight: 8 }, fc.constant(VIEWER), fc.constant(null), fc.constant('junk')),
});

describe('fuzz: malformed paths, queries and bodies to every route', () => {
  it.each(ROUTES.map((r) => [`${r.method} ${r.template}`, r] as const))('%s never answers 5xx, and every error has a detail', async (_label, route) => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        let i = 0;
        let path = route.template.replace(/\{\w+\}/g, () => r.params[i++]!);
        if (r.extraSegment !== undefined) path += `/${r.extraSegment}`;
        const method = r.method ?? route.method;
        const res = await svc.request(method, `${path}${r.query}`, {
          token: r.token,
          ...(r.body !== undefined && method !== 'GET' ? { rawBody: r.body.raw, headers: { 'content-type': r.body.type } } : {}),
        });
        expect(res.status, `${method} ${path}${r.query} -> ${JSON.stringify(res.body)}`).toBeLessThan(500);
        if (res.status >= 400) {
          expect(typeof res.body?.detail, `${method} ${path}${r.query} -> ${JSON.stringify(res.body)}`).toBe('string');
          expect(res.body.detail.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: Number(process.env['FUZZ_RUNS'] ?? 60) },
    );
  });
});
