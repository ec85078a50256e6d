import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startService, type Service } from './fixture.js';

/**
 * Query strings on the real SQLite-backed service: numbers are decimal integers in range (or a
 * 422 naming the parameter), unknown parameters are refused with the valid ones listed, and
 * the filters users expect on /usage/history are honoured.
 */
let svc: Service;
let threadId: string;
let otherThread: string;

beforeAll(async () => {
  svc = await startService({ storage: 'sqlite' });
  const inject = async (userId: string) => {
    const res = await svc.request('POST', '/api/v1/inject', {
      body: { to: 'greeter', payload: { Greeting: { name: userId } }, metadata: { orgId: 'acme', userId } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.threadId as string;
  };
  threadId = await inject('u-1');
  otherThread = await inject('u-2');
  await eventually(async () => (await svc.request('GET', '/api/v1/usage/history')).body.total === 2 || null, 'two usage events');
});
afterAll(async () => {
  await svc?.close();
});

/** Every (path, integer query parameter) the OpenAPI document declares, with real path ids. */
async function integerParameters(): Promise<Array<[string, string]>> {
  const doc = (await svc.request('GET', '/api/v1/openapi.json')).body as {
    paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string; schema?: { type?: string } }> }>>;
  };
  const out: Array<[string, string]> = [];
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (method !== 'get') continue;
      for (const p of op.parameters ?? []) {
        if (p.in === 'query' && (p.schema?.type === 'integer' || p.schema?.type === 'number')) {
          out.push([template.replace('{threadId}', threadId).replace('{name}', 'greeter'), p.name]);
        }
      }
    }
  }
  return out;
}

const NOT_DECIMAL = ['1e309', '-1e309', '1e400', 'Infinity', '-Infinity', 'NaN', '-0', '0x10', '1e1', '+5', ' 5', '5.0', '010', ''];
const OUT_OF_RANGE = ['9223372036854775808', '99999999999999999999', '-9223372036854775809', '9007199254740993'];

describe('numbers in query strings', () => {
  it('the document declares limit and offset on every list route, /threads/{id}/messages included', async () => {
    const params = await integerParameters();
    const paths = new Set(params.map(([p]) => p));
    for (const p of ['/api/v1/threads', `/api/v1/threads/${threadId}/messages`, '/api/v1/messages', '/api/v1/journal', '/api/v1/usage/history']) {
      expect(paths.has(p), p).toBe(true);
    }
    expect(params.length).toBeGreaterThanOrEqual(10);
  });

  it.each([...NOT_DECIMAL, ...OUT_OF_RANGE])('%j is a 422 naming the parameter on every route', async (value) => {
    for (const [path, name] of await integerParameters()) {
      const res = await svc.request('GET', `${path}?${name}=${encodeURIComponent(value)}`);
      expect(res.status, `${path}?${name}=${value} -> ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.body.code).toBe('INVALID_REQUEST');
      expect(res.body.detail.startsWith(`${name} `), res.body.detail).toBe(true);
      expect(res.body.errors).toEqual([expect.objectContaining({ location: 'querystring', field: name })]);
    }
  });

  it('decimal integers in range are answered, the largest safe offset too (an empty page)', async () => {
    for (const [path, name] of await integerParameters()) {
      const value = name === 'offset' ? String(Number.MAX_SAFE_INTEGER) : '1';
      const res = await svc.request('GET', `${path}?${name}=${value}`);
      expect(res.status, `${path}?${name}=${value} -> ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body[name], `${path}?${name}=${value} -> ${JSON.stringify(res.body).slice(0, 300)}`).toBe(Number(value));
    }
  });

  it('a bound is still a 422 with the bound', async () => {
    const res = await svc.request('GET', '/api/v1/threads?limit=101&offset=-1');
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('limit must be <= 100; offset must be >= 0');
  });

  it('a repeated number is refused', async () => {
    const res = await svc.request('GET', '/api/v1/messages?limit=1&limit=2');
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('limit must be given once');
  });

  it('numbers in JSON bodies must be finite', async () => {
    const res = await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { rawBody: '{"maxTokens": 1e400}' });
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('body.maxTokens must be an integer');
  });
});

describe('unknown query parameters', () => {
  it('are refused with the valid ones listed', async () => {
    const res = await svc.request('GET', '/api/v1/threads?stauts=active');
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('stauts is not a parameter of this route (valid parameters: status, agent, startTime, endTime, text, limit, offset)');
  });

  it('on a route without parameters, too', async () => {
    const res = await svc.request('GET', '/api/v1/agents?verbose=1');
    expect(res.status).toBe(422);
    expect(res.body.detail).toBe('verbose is not a parameter of this route (this route takes no query parameters)');
  });

  it('snake_case names of valid parameters are still accepted', async () => {
    const res = await svc.request('GET', `/api/v1/messages?thread_id=${threadId}`);
    expect(res.status).toBe(200);
    expect(res.body.messages.every((m: { threadId: string }) => m.threadId === threadId)).toBe(true);
  });
});

describe('/usage/history filters', () => {
  it('threadId keeps the events of that thread only, and total counts them', async () => {
    const res = await svc.request('GET', `/api/v1/usage/history?threadId=${threadId}`);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(res.body.events.map((e: { threadId: string }) => e.threadId)).toEqual([threadId]);
    const other = await svc.request('GET', `/api/v1/usage/history?thread_id=${otherThread}`);
    expect(other.body.events.map((e: { threadId: string }) => e.threadId)).toEqual([otherThread]);
  });

  it('userId keeps the events of messages injected with that user', async () => {
    const res = await svc.request('GET', '/api/v1/usage/history?userId=u-2');
    expect(res.body.total).toBe(1);
    expect(res.body.events[0]).toMatchObject({ threadId: otherThread, metadata: { userId: 'u-2' } });
    expect((await svc.request('GET', '/api/v1/usage/history?userId=nobody')).body).toMatchObject({ total: 0, events: [] });
  });

  it('filters combine', async () => {
    const res = await svc.request('GET', `/api/v1/usage/history?userId=u-1&threadId=${otherThread}`);
    expect(res.body).toMatchObject({ total: 0, events: [] });
  });
});
