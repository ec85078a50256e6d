import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { jobYaml, startCli, until } from './processes.js';

const OPERATOR = 'op-secret-token-0f3a9c7e51';
const VIEWER = 'viewer-secret-token-8b2d6e4f90';
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const YAML = jobYaml(
  'secrets',
  `auth:
  tokens:
    - {name: dashboard, role: viewer, token_env: SECRETS_VIEWER_TOKEN}
`,
);

/** Opens a WebSocket and waits for its first frame (the server has then logged the upgrade). */
function firstFrame(url: string, headers: Record<string, string> = {}): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('message', (data) => {
      resolve(JSON.parse(String(data)));
      ws.close();
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode });
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

/** Two Authorization headers (fetch cannot send that). */
function doubleAuthorization(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    s.write(`GET /api/v1/organism HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${OPERATOR}\r\nAuthorization: ${VIEWER}\r\nConnection: close\r\n\r\n`);
    s.on('data', () => undefined);
    s.on('end', () => resolve());
    s.on('error', reject);
  });
}

describe('no token in any log line of a whole server run', () => {
  it('serve at trace level, REST + WebSocket (?token=) + bad credentials + reload + stop: neither token appears', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-secrets-'));
    dirs.push(dir);
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'worker.ts'), `export const work = async () => {};\n`);
    const { child, output, exited } = startCli(['serve', path.join(dir, 'organism.yaml'), '--port', '0', '--log-level', 'trace', '--no-supervisor'], {
      ORGANISM_API_TOKEN: OPERATOR,
      SECRETS_VIEWER_TOKEN: VIEWER,
    });
    try {
      const port = Number(await until(() => /API:\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(output())?.[1], 'the server to listen', 30_000));
      const base = `http://127.0.0.1:${port}`;
      const op = { authorization: `Bearer ${OPERATOR}` };
      const call = (p: string, init: RequestInit = {}) => fetch(`${base}${p}`, init).then(async (r) => ({ status: r.status, body: await r.text() }));

      expect((await call('/health')).status).toBe(200);
      expect((await call('/api/v1/organism', { headers: op })).status).toBe(200);
      expect((await call('/api/v1/threads', { headers: { authorization: `Bearer ${VIEWER}` } })).status).toBe(200);
      const inject = await call('/api/v1/inject', {
        method: 'POST',
        headers: { ...op, 'content-type': 'application/json' },
        body: JSON.stringify({ to: 'worker', payload: { Job: { n: 1 } } }),
      });
      expect(inject.status, inject.body).toBe(200);
      // Credentials where they do not belong: refused, and still not logged.
      expect((await call(`/api/v1/organism?token=${OPERATOR}`)).status).toBe(401);
      expect((await call(`/api/v1/organism?token=${VIEWER}`, { headers: op })).status).toBe(422);
      expect((await call('/api/v1/organism', { headers: { authorization: OPERATOR } })).status).toBe(401);
      expect((await call(`/api/v1/no/such/route?token=${OPERATOR}`, { headers: op })).status).toBe(404);
      await doubleAuthorization(port);
      // The documented browser form of WebSocket auth, on both channels, and a wrong one.
      expect(await firstFrame(`ws://127.0.0.1:${port}/ws?token=${OPERATOR}`)).toMatchObject({ event: 'connected' });
      expect(await firstFrame(`ws://127.0.0.1:${port}/ws/messages?since=0&token=${encodeURIComponent(VIEWER)}`)).toMatchObject({ event: 'connected' });
      expect(await firstFrame(`ws://127.0.0.1:${port}/ws?token=${OPERATOR}x`)).toEqual({ status: 401 });
      expect(await firstFrame(`ws://127.0.0.1:${port}/ws`, op)).toMatchObject({ event: 'connected' });
      expect((await call('/api/v1/organism/reload', { method: 'POST', headers: op })).status).toBe(200);
      expect((await call('/api/v1/organism/stop', { method: 'POST', headers: op })).status).toBe(200);
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const out = output();
    // The run was logged (so the assertion below is about real log lines), WebSocket upgrades included.
    expect(out).toContain('"msg":"incoming request"');
    expect(out).toContain('/ws?token=[redacted]');
    expect(out).toContain('/ws/messages?since=0&token=[redacted]');
    for (const token of [OPERATOR, VIEWER]) {
      const leaked = out.split('\n').filter((line) => line.includes(token));
      expect(leaked, `log lines with a token:\n${leaked.join('\n')}`).toEqual([]);
    }
  });
});
