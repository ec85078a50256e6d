import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { BASE_LISTENERS, eventually, organismYaml, startService, type Service } from './fixture.js';

let svc: Service | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

describe('faults and limits', () => {
  it('a full queue -> 503 busy with Retry-After', async () => {
    svc = await startService({ yaml: organismYaml(BASE_LISTENERS).replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: 50000\nmax_queue: 2') });
    const s = svc;
    await s.request('POST', '/api/v1/agents/echo/pause');
    const send = () => s.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: 'fill' } } } });
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(200);
    const res = await send();
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body.detail).toBe('Organism busy: the message queue is full (2 messages); retry later');
  });

  it('an unexpected fault -> 500 with a generic detail, and it is logged', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    svc = await startService({ app: { logger: pino({ level: 'error' }, sink) } });
    const journal = svc.organism.storage.journal as { stats: () => Promise<unknown> };
    journal.stats = () => Promise.reject(new TypeError('disk on fire'));
    const res = await svc.request('GET', '/api/v1/journal/stats');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ detail: 'Internal server error', code: 'INTERNAL_ERROR' });
    await eventually(() => lines.some((l) => l.includes('disk on fire')) || null, 'error log line');
  });

  it('GET /organism/config shows env var names, never their values', async () => {
    process.env['SVC_TEST_SECRET_KEY'] = 'sk-very-secret-value-123';
    try {
      const yaml = organismYaml(BASE_LISTENERS).replace(
        '  pricing:\n',
        '    - name: real\n      type: openai\n      api_key_env: SVC_TEST_SECRET_KEY\n      base_url: https://user:pw@llm.example/v1?key=sk-very-secret-value-123\n      models: [gpt-4o]\n  pricing:\n',
      );
      svc = await startService({ yaml });
      const res = await svc.request('GET', '/api/v1/organism/config');
      expect(res.status).toBe(200);
      const text = JSON.stringify(res.body);
      expect(text).toContain('SVC_TEST_SECRET_KEY');
      expect(text).not.toContain('sk-very-secret-value-123');
      expect(text).not.toContain('pw@');
    } finally {
      delete process.env['SVC_TEST_SECRET_KEY'];
    }
  });

  it('an empty JSON body on a route without one is fine', async () => {
    svc = await startService();
    const res = await svc.request('POST', '/api/v1/agents/echo/pause', { rawBody: '' });
    expect(res.status).toBe(200);
  });
});
