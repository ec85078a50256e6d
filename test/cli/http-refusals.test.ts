import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, organismDir, startServer, TOKEN, type ServerProcess } from './processes.js';

/**
 * What Node's HTTP parser and the JSON body parser refuse, against the real server process on
 * its SQLite store: every refusal has the service's error body, `{detail, code}`, with a detail
 * saying what was wrong (Node's and Fastify's own bodies have none), and the server lives on.
 */
let server: ServerProcess;
let port: number;
beforeAll(async () => {
  const dir = organismDir(
    `organism: {name: refusals}
payloads:
  Job: {fields: {n: integer}}
listeners:
  - {name: worker, handler: ./worker.ts#work, payload: Job}
`,
    { 'worker.ts': 'export const work = () => {};\n' },
  );
  server = await startServer(path.join(dir, 'organism.yaml'), ['--data-dir', path.join(dir, 'data')]);
  port = Number(new URL(server.base).port);
}, 120_000);
afterAll(() => killAll());

interface RawAnswer {
  status: number;
  headers: string;
  body: { detail?: unknown; code?: unknown } | null;
}

/** Writes `text` on a fresh connection and reads one response (by Content-Length, or to the close). */
function raw(text: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const done = () => {
      socket.destroy();
      const s = data.toString('latin1');
      const end = s.indexOf('\r\n\r\n');
      const head = end < 0 ? s : s.slice(0, end);
      const bodyText = end < 0 ? '' : data.subarray(end + 4).toString('utf8');
      let body: RawAnswer['body'] = null;
      try {
        body = JSON.parse(bodyText) as RawAnswer['body'];
      } catch {
        // not JSON: the assertions show what came
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body });
    };
    socket.on('data', (d: Buffer) => {
      data = Buffer.concat([data, d]);
      const s = data.toString('latin1');
      const end = s.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(s.slice(0, end))?.[1];
      if (end >= 0 && length !== undefined && data.length >= end + 4 + Number(length)) done();
    });
    socket.on('end', done);
    socket.setTimeout(15_000, done); // an answer without Content-Length that keeps the connection
    socket.on('error', (err) => (data.length > 0 ? done() : reject(err)));
    socket.write(text);
  });
}

const expectError = (a: RawAnswer | { status: number; body: unknown }, status: number, code: string, detail: RegExp) => {
  const shown = JSON.stringify(a);
  expect(a.status, shown).toBe(status);
  const body = a.body as { detail?: unknown; code?: unknown } | null;
  expect(body?.code, shown).toBe(code);
  expect(String(body?.detail), shown).toMatch(detail);
};

describe('refusals of the HTTP parser have the service error body', () => {
  it('a URL over 16 KB is a 431 naming the limit', async () => {
    const res = await fetch(`${server.base}/api/v1/threads?filter=${'a'.repeat(20_000)}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expectError({ status: res.status, body: await res.json() }, 431, 'HEADERS_TOO_LARGE', /request line and headers are larger than 16384 bytes/);
  });

  it('headers over 16 KB are a 431 too', async () => {
    const answer = await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
    expectError(answer, 431, 'HEADERS_TOO_LARGE', /16384 bytes/);
  });

  it.each([
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n', /^Malformed HTTP request: Invalid method/],
    ['a space in the path', 'GET /hea lth HTTP/1.1\r\nHost: x\r\n\r\n', /^Malformed HTTP request: /],
    ['a header name with a space', 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n', /^Malformed HTTP request: Invalid header token/],
    ['a Content-Length that is not a number', 'POST /api/v1/inject HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', /Content-Length/],
    ['an HTTP/1.1 request without Host', 'GET /health HTTP/1.1\r\n\r\n', /^Malformed HTTP request: an HTTP\/1.1 request needs a Host header$/],
  ])('%s is a 400 with a detail', async (_label, text, detail) => {
    expectError(await raw(text), 400, 'MALFORMED_HTTP', detail);
  });

  it('an unknown Expect is a 417 naming it', async () => {
    expectError(await raw('GET /health HTTP/1.1\r\nHost: x\r\nExpect: 100-nonsense\r\n\r\n'), 417, 'EXPECTATION_FAILED', /^Expect: 100-nonsense is not supported/);
  });

  it('a body over the limit is a 413 naming it, announced or streamed', async () => {
    const big = `{"to":"worker","payload":{"Job":{"n":1}},"pad":"${'p'.repeat(1_100_000)}"}`;
    const announced = await server.api('/inject', { method: 'POST', body: big });
    expectError({ status: announced.status, body: await announced.json() }, 413, 'BODY_TOO_LARGE', /larger than 1048576 bytes/);
    const chunked = await raw(
      `POST /api/v1/inject HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${Buffer.byteLength(big).toString(16)}\r\n${big}\r\n0\r\n\r\n`,
    );
    expectError(chunked, 413, 'BODY_TOO_LARGE', /larger than 1048576 bytes/);
  });
});

describe('JSON bodies', () => {
  const inject = async (text: string) => {
    const res = await server.api('/inject', { method: 'POST', body: text });
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it('a __proto__ key is refused by name and place, not as malformed JSON', async () => {
    expectError(await inject('{"to":"worker","payload":{"Job":{"n":1}},"__proto__":{"admin":true}}'), 400, 'FORBIDDEN_JSON_KEY', /^JSON key __proto__ is not allowed \(at body\.__proto__\)/);
    expectError(await inject('{"to":"worker","payload":{"Job":{"n":1,"x":[{"__proto__":{}}]}}}'), 400, 'FORBIDDEN_JSON_KEY', /\(at body\.payload\.Job\.x\[0\]\.__proto__\)/);
    // Written with an escape, it is the same key.
    expectError(await inject('{"to":"worker","\\u005f_proto__":{}}'), 400, 'FORBIDDEN_JSON_KEY', /JSON key __proto__/);
  });

  it('constructor.prototype is refused by name and place; a plain "constructor" field is not', async () => {
    expectError(
      await inject('{"to":"worker","payload":{"Job":{"constructor":{"prototype":{"x":1}}}}}'),
      400,
      'FORBIDDEN_JSON_KEY',
      /^JSON key constructor\.prototype is not allowed \(at body\.payload\.Job\.constructor\.prototype\)/,
    );
    const plain = await inject('{"to":"worker","payload":{"Job":{"n":1}},"metadata":{"constructor":"me"}}');
    expect(plain.body, JSON.stringify(plain)).not.toMatchObject({ code: 'FORBIDDEN_JSON_KEY' });
  });

  it('malformed JSON says what and where', async () => {
    expectError(await inject('{"to":"worker",}'), 400, 'MALFORMED_JSON', /^Malformed JSON body: .*position 15/);
    expectError(await inject('['.repeat(600_000)), 400, 'MALFORMED_JSON', /^Malformed JSON body: /);
  });
});

describe('numbers', () => {
  it.each(['9223372036854775808', '1e309', 'Infinity', '-Infinity', '1e400', '0x10', '-0'])('%s as limit or offset of /threads/{id}/messages is a 422 naming it', async (value) => {
    for (const name of ['limit', 'offset']) {
      const res = await server.api(`/threads/some-thread/messages?${name}=${encodeURIComponent(value)}`);
      expectError({ status: res.status, body: await res.json() }, 422, 'INVALID_REQUEST', new RegExp(`^${name} `));
    }
  });

  it.each(['__proto__', 'a__b', '_x'])('an unknown query parameter %s is named as given (not camelCased)', async (name) => {
    const res = await server.api(`/threads?${encodeURIComponent(name)}=1`);
    expectError({ status: res.status, body: await res.json() }, 422, 'INVALID_REQUEST', new RegExp(`^${name} is not a parameter of this route`));
  });

  it.each(['"0x10"', '"1e3"', '" 5"', '"5"'])('a thread budget given as the string %s is a 422 naming maxTokens (no coercion)', async (value) => {
    const res = await server.api('/usage/threads/some-thread', { method: 'PUT', body: `{"maxTokens":${value}}` });
    expectError({ status: res.status, body: await res.json() }, 422, 'INVALID_REQUEST', /^maxTokens must be a JSON number \(e\.g\. 1000\), not the string /);
  });

  it('a thread budget of 0 tokens is a 422 naming maxTokens', async () => {
    const res = await server.api('/usage/threads/some-thread', { method: 'PUT', body: JSON.stringify({ maxTokens: 0 }) });
    expectError({ status: res.status, body: await res.json() }, 422, 'INVALID_REQUEST', /maxTokens must be >= 1/);
  });
});

describe('after all that', () => {
  it('the server still answers', async () => {
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });
});
