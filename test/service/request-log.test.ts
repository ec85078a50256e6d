import { Writable } from 'node:stream';
import { pino, type Level } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { requestLogLevel } from '../../src/service/request-log.js';
import { eventually, OPERATOR, startService, type Service } from './fixture.js';

let svc: Service | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

type Line = Record<string, unknown> & { level: number; msg: string };

/** A service whose log lines (pino JSON) are collected, at `level`. */
async function logged(level: Level, slowMs?: number): Promise<{ svc: Service; lines: Line[] }> {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
      done();
    },
  });
  svc = await startService({ app: { logger: pino({ level }, sink), ...(slowMs !== undefined ? { requestLog: { slowMs } } : {}) } });
  return { svc, lines };
}

const LEVEL = { debug: 20, info: 30, warn: 40 } as const;
const accessLines = (lines: readonly Line[], url: string) => lines.filter((l) => l['url'] === url && l.msg !== 'incoming request');

describe('request log levels', () => {
  it('debug for a request that went well, info for 4xx and 503, warn for other 5xx and slow requests (never a WebSocket)', () => {
    expect(requestLogLevel(200, 3, 1000, false)).toBe('debug');
    expect(requestLogLevel(304, 3, 1000, false)).toBe('debug');
    expect(requestLogLevel(401, 3, 1000, false)).toBe('info');
    expect(requestLogLevel(404, 3, 1000, false)).toBe('info');
    expect(requestLogLevel(503, 3, 1000, false)).toBe('info');
    expect(requestLogLevel(500, 3, 1000, false)).toBe('warn');
    expect(requestLogLevel(507, 3, 1000, false)).toBe('warn');
    expect(requestLogLevel(200, 1000, 1000, false)).toBe('warn');
    expect(requestLogLevel(401, 5000, 1000, false)).toBe('warn');
    expect(requestLogLevel(200, 5000, 0, false)).toBe('debug');
    expect(requestLogLevel(101, 60_000, 1000, true)).toBe('debug');
  });

  it('at info, a successful request writes no line; a refused one writes one, with its URL redacted', async () => {
    const { svc: s, lines } = await logged('info');
    expect((await s.request('GET', '/api/v1/agents')).status).toBe(200);
    expect((await s.request('GET', '/health', { token: null })).status).toBe(200);
    expect((await s.request('GET', '/api/v1/agents', { token: null })).status).toBe(401);
    expect((await s.request('GET', `/api/v1/agents?token=${OPERATOR}`)).status).toBe(422);
    const refused = await eventually(() => (accessLines(lines, '/api/v1/agents?token=[redacted]').length > 0 ? lines : null), 'the 422 line');
    const agents = accessLines(refused, '/api/v1/agents');
    expect(agents).toHaveLength(1);
    expect(agents[0]).toMatchObject({ level: LEVEL.info, msg: 'request completed', method: 'GET', route: '/api/v1/agents', statusCode: 401 });
    expect(typeof agents[0]!['responseTime']).toBe('number');
    expect(accessLines(refused, '/health')).toEqual([]);
    expect(accessLines(refused, '/api/v1/agents?token=[redacted]')[0]).toMatchObject({ level: LEVEL.info, statusCode: 422 });
    expect(refused.filter((l) => l.msg === 'incoming request')).toEqual([]);
    for (const l of refused) expect(JSON.stringify(l)).not.toContain(OPERATOR);
  });

  it('at debug, every request: incoming and completed', async () => {
    const { svc: s, lines } = await logged('debug');
    expect((await s.request('GET', '/api/v1/agents')).status).toBe(200);
    const done = await eventually(() => accessLines(lines, '/api/v1/agents')[0], 'the completed line');
    expect(done).toMatchObject({ level: LEVEL.debug, msg: 'request completed', statusCode: 200, route: '/api/v1/agents' });
    // The request's logger is made only when a line is written, with the request id bound.
    expect(done['reqId']).toMatch(/^req-/);
    const incoming = lines.find((l) => l.msg === 'incoming request' && (l['req'] as { url?: string } | undefined)?.url === '/api/v1/agents');
    expect(incoming?.['reqId']).toBe(done['reqId']);
    expect(lines.some((l) => l.msg === 'incoming request' && l.level === LEVEL.debug)).toBe(true);
  });

  it('a request at or above the slow threshold is a warning, whatever its status', async () => {
    // Any request takes more than a nanosecond: each is slow here.
    const { svc: s, lines } = await logged('warn', 1e-6);
    expect((await s.request('GET', '/api/v1/agents')).status).toBe(200);
    const slow = await eventually(() => accessLines(lines, '/api/v1/agents')[0], 'the slow line');
    expect(slow).toMatchObject({ level: LEVEL.warn, statusCode: 200, route: '/api/v1/agents' });
    expect(slow.msg).toMatch(/^slow request/);
  });
});
