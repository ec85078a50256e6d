import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import fc from 'fast-check';
import { createAuthenticator, sameToken } from '../../src/service/auth.js';
import { eventually, OPERATOR, startService, VIEWER, type Service } from './fixture.js';
import { fill, ROUTES, type RouteCase } from './route-table.js';

let svc: Service;
let ids: Record<string, string>;

beforeAll(async () => {
  svc = await startService();
  const res = await svc.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: 'auth' } } } });
  await eventually(async () => (await svc.request('GET', `/api/v1/threads/${res.body.threadId}`)).status === 200 || null, 'thread');
  ids = { name: 'echo', threadId: res.body.threadId, otherId: res.body.threadId, agentId: 'echo', model: 'mock-small', messageId: res.body.messageId, id: res.body.messageId };
});
afterAll(async () => {
  await svc?.close();
});

const call = (route: RouteCase, token: string | null, extra: Record<string, string> = {}) =>
  svc.request(route.method, fill(route.template, ids), {
    token,
    ...(route.body !== undefined ? { body: route.body } : {}),
    ...(Object.keys(extra).length ? { headers: extra } : {}),
  });

describe('auth matrix: no token / viewer / operator x every route', () => {
  it('the route table covers every documented route', () => {
    const documented = svc.checker.routes.map((r) => `${r.method} ${r.template}`).sort();
    const table = ROUTES.filter((r) => r.template !== '/api/v1/openapi.json' && !r.undocumented)
      .map((r) => `${r.method} ${r.template}`)
      .sort();
    expect(table).toEqual(documented);
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.template}`, r] as const))('%s', async (_label, route) => {
    const none = await call(route, null);
    const wrong = await call(route, 'not-a-token');
    if (route.access === 'public') {
      expect(none.status).toBe(200);
      expect(wrong.status).toBe(200);
    } else {
      for (const res of [none, wrong]) {
        expect(res.status).toBe(401);
        expect(res.body.detail).toBe('Authentication required');
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    }
    const viewer = await call(route, VIEWER);
    if (route.access === 'operator') {
      expect(viewer.status).toBe(403);
      expect(viewer.body.detail).toBe('Operator role required');
    } else if (route.access === 'approver') {
      expect(viewer.status).toBe(403);
      expect(viewer.body.detail).toBe('Approver or operator role required');
    } else {
      expect([401, 403]).not.toContain(viewer.status);
      expect(viewer.status, JSON.stringify(viewer.body)).toBeLessThan(500);
    }
    const operator = await call(route, OPERATOR);
    expect([401, 403]).not.toContain(operator.status);
    expect(operator.status, JSON.stringify(operator.body)).toBeLessThan(500);
  });

  it('GET /whoami names the calling token and its role, never the token', async () => {
    const viewer = await svc.request('GET', '/api/v1/whoami', { token: VIEWER });
    const operator = await svc.request('GET', '/api/v1/whoami', { token: OPERATOR });
    expect(viewer.body.role).toBe('viewer');
    expect(operator.body.role).toBe('operator');
    expect(viewer.body.name).not.toBe(operator.body.name);
    expect(JSON.stringify(viewer.body)).not.toContain(VIEWER);
  });

  it('accepts the scheme in any case and rejects other schemes', async () => {
    const lower = await svc.request('GET', '/api/v1/organism', { token: null, headers: { authorization: `bearer ${VIEWER}` } });
    expect(lower.status).toBe(200);
    const basic = await svc.request('GET', '/api/v1/organism', { token: null, headers: { authorization: `Basic ${VIEWER}` } });
    expect(basic.status).toBe(401);
  });

  it('a token in the query string is not accepted for REST', async () => {
    const res = await svc.request('GET', `/api/v1/organism?token=${OPERATOR}`, { token: null });
    expect(res.status).toBe(401);
  });
});

describe('sameToken: the constant-time comparison', () => {
  it('is string equality for any two strings (prefixes, suffixes, wrap-around repeats, other lengths, non-ASCII)', () => {
    for (const [a, b] of [
      ['alpha', 'alpha'],
      ['alpha', 'alph'],
      ['alph', 'alpha'],
      ['alphaalpha', 'alpha'],
      ['alpha', 'alphaalpha'],
      ['', 'alpha'],
      ['alpha', ''],
      ['', ''],
      ['tökén', 'tökén'],
      ['tökén', 'token'],
    ]) {
      expect(sameToken(a!, b!), `${a} vs ${b}`).toBe(a === b && b !== '');
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), (a, b) => sameToken(a, b) === (a === b && b !== '')),
      { numRuns: 2_000 },
    );
    fc.assert(fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), (a) => sameToken(a, a)));
  });
});

describe('createAuthenticator', () => {
  const auth = createAuthenticator({
    tokens: [
      { name: 'a', role: 'operator', token: 'alpha-token' },
      { name: 'b', role: 'viewer', token: 'beta' },
    ],
  });

  it('resolves header values and bare tokens to their principal', () => {
    expect(auth('Bearer alpha-token')).toEqual({ name: 'a', role: 'operator' });
    expect(auth('beta')).toEqual({ name: 'b', role: 'viewer' });
    expect(auth('Bearer  beta ')).toEqual({ name: 'b', role: 'viewer' });
  });

  it('rejects unknown, empty, prefixed and suffixed tokens', () => {
    for (const v of [undefined, null, '', 'Bearer', 'Bearer ', 'alpha', 'alpha-token-x', 'Bearer alpha-token x', 'Token alpha-token']) {
      expect(auth(v)).toBeNull();
    }
  });

  it('with auth disabled everyone is an operator', () => {
    expect(createAuthenticator({ tokens: [], enabled: false })(undefined)).toEqual({ name: 'anonymous', role: 'operator' });
  });

  it('with no tokens configured nobody gets in', () => {
    expect(createAuthenticator({ tokens: [] })('Bearer anything')).toBeNull();
  });
});

/** A request written by hand (fetch may not set Connection/Upgrade, nor send a header twice). */
function rawGet(path: string, headers: Array<[string, string]>): Promise<{ status: number; body: string }> {
  const url = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const hasConnection = headers.some(([k]) => k.toLowerCase() === 'connection');
    const lines = [`GET ${path} HTTP/1.1`, `Host: ${url.host}`, ...headers.map(([k, v]) => `${k}: ${v}`), ...(hasConnection ? [] : ['Connection: close'])];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    let text = '';
    socket.setEncoding('utf8');
    const done = () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const head = text.indexOf('\r\n\r\n');
      resolve({ status, body: head >= 0 ? text.slice(head + 4) : '' });
      socket.destroy();
    };
    socket.on('data', (chunk: string) => {
      text += chunk;
      // A 101 keeps the socket open: the status line is all we need.
      if (/^HTTP\/1\.1 101 /.test(text) && text.includes('\r\n\r\n')) done();
    });
    socket.on('end', done);
    socket.on('error', reject);
  });
}

describe('where a token is accepted', () => {
  it('?token= is refused on REST routes even with Upgrade: websocket, with or without Connection: upgrade', async () => {
    for (const headers of [
      [['Upgrade', 'websocket']],
      [
        ['Upgrade', 'websocket'],
        ['Connection', 'Upgrade'],
      ],
    ] as Array<Array<[string, string]>>) {
      const res = await rawGet(`/api/v1/organism?token=${OPERATOR}`, headers);
      expect(res.status, JSON.stringify(headers) + res.body).toBe(401);
      expect(JSON.parse(res.body).detail).toBe('Authentication required');
    }
  });

  it('an upgrade to a REST route or an unknown URL is answered over HTTP and its socket ended (rawGet waits for the end)', async () => {
    const upgrade: Array<[string, string]> = [
      ['Upgrade', 'websocket'],
      ['Connection', 'Upgrade'],
      ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
      ['Sec-WebSocket-Version', '13'],
    ];
    const rest = await rawGet('/api/v1/organism', [...upgrade, ['Authorization', `Bearer ${OPERATOR}`]]);
    expect(rest.status, rest.body).toBe(200);
    expect(JSON.parse(rest.body)).toHaveProperty('status');
    const unknown = await rawGet('/nowhere', [...upgrade, ['Authorization', `Bearer ${OPERATOR}`]]);
    expect(unknown.status, unknown.body).toBe(404);
    const refused = await rawGet('/ws/nowhere', upgrade);
    expect(refused.status, refused.body).toBe(404);
  });

  it('?token= on /ws needs a real upgrade (Upgrade: websocket and Connection: upgrade)', async () => {
    const key = ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='] as [string, string];
    const version = ['Sec-WebSocket-Version', '13'] as [string, string];
    const halfUpgrade = await rawGet(`/ws?token=${VIEWER}`, [['Upgrade', 'websocket'], key, version]);
    expect(halfUpgrade.status, halfUpgrade.body).toBe(401);
    const real = await rawGet(`/ws?token=${VIEWER}`, [['Upgrade', 'websocket'], ['Connection', 'keep-alive, Upgrade'], key, version]);
    expect(real.status).toBe(101);
  });

  it('a bare token in Authorization (no Bearer scheme) is refused, naming the scheme', async () => {
    const res = await svc.request('GET', '/api/v1/organism', { token: null, headers: { authorization: OPERATOR } });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: 'AUTH_SCHEME', detail: 'Authorization must be "Bearer <token>"' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('two Authorization headers are refused, whichever comes first', async () => {
    for (const pair of [
      [`Bearer ${OPERATOR}`, 'Bearer junk'],
      ['Bearer junk', `Bearer ${OPERATOR}`],
    ]) {
      const res = await rawGet(
        '/api/v1/organism',
        pair.map((v) => ['Authorization', v] as [string, string]),
      );
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'AUTH_AMBIGUOUS', detail: 'Send one Authorization header, not 2' });
    }
  });
});
