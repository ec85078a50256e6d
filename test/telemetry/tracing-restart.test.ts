import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { traceIdOfThread } from '../../src/telemetry/tracing.js';
import { eventually } from '../service/fixture.js';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.js';
import { TEST_HANDLERS } from './workload.js';

const MAIN = path.resolve('src/cli/main.ts');
const TOKEN = 'restart-operator-token-0123456789';

const YAML = `organism:
  name: restart-trace
payloads:
  Text:
    fields:
      text: string
listeners:
  - name: hop1
    payload: Text
    peers: [hop2]
    handler: ${TEST_HANDLERS}#relay
  - name: hop2
    payload: Text
    peers: [hop3]
    handler: ${TEST_HANDLERS}#holdOnce
  - name: hop3
    payload: Text
    handler: ${TEST_HANDLERS}#relay
`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

describe('one trace per thread across a restart of a real serve process', () => {
  const children: ChildProcess[] = [];
  let receiver: OtlpReceiver | null = null;
  const dir = mkdtempSync(path.join(tmpdir(), 'organism-trace-restart-'));
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a delivery interrupted by the stop is redelivered after the restart in the same trace, under the same parent', async () => {
    receiver = await startOtlpReceiver();
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const serve = () => {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          MAIN,
          'serve',
          path.join(dir, 'organism.yaml'),
          '--port',
          String(port),
          '--data-dir',
          path.join(dir, 'data'),
          '--drain-timeout',
          '1',
          '--no-supervisor',
          '--log-level',
          'warn',
        ],
        {
          env: {
            ...process.env,
            ORGANISM_API_TOKEN: TOKEN,
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.url,
            OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
            OTEL_BSP_SCHEDULE_DELAY: '100',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      return { child, exited: new Promise<number | null>((r) => child.on('exit', (code) => r(code))) };
    };
    const api = (p: string, init: RequestInit = {}) => fetch(`${base}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
    const up = () => eventually(async () => (await api('/organism').catch(() => null))?.ok, 'the server', 120_000);

    const first = serve();
    await up();
    const res = await api('/inject', { method: 'POST', body: JSON.stringify({ to: 'hop1', payload: { Text: { text: 'x' } } }) });
    expect(res.status).toBe(200);
    const { threadId } = (await res.json()) as { threadId: string };
    // Stopped only once hop2 holds its delivery (DISPATCHED): recovery then redelivers it as attempt 2.
    await eventually(
      async () => {
        const page = (await (await api(`/journal?threadId=${threadId}&state=DISPATCHED`)).json()) as { total: number };
        return page.total === 1;
      },
      'hop2 to hold its delivery',
      60_000,
    );
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = serve();
    await up();
    const traceId = traceIdOfThread(threadId);
    const names = () => receiver!.spans.filter((s) => s.traceId === traceId && s.name.startsWith('execute_tool')).map((s) => s.name);
    await eventually(() => names().includes('execute_tool hop3'), 'hop3 after the restart', 60_000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const spans = receiver!.spans.filter((s) => s.traceId === traceId && s.name.startsWith('execute_tool'));
    expect(spans.map((s) => s.name).sort()).toEqual(['execute_tool hop1', 'execute_tool hop2', 'execute_tool hop2', 'execute_tool hop3']);
    const hop1 = spans.find((s) => s.name === 'execute_tool hop1')!;
    const [interrupted, redelivered] = [1, 2].map((n) => spans.find((s) => s.name === 'execute_tool hop2' && s.attributes['organism.attempt'] === n)!);
    const hop3 = spans.find((s) => s.name === 'execute_tool hop3')!;
    expect(interrupted!.attributes['organism.outcome']).toBe('interrupted');
    expect(interrupted!.parentSpanId).toBe(hop1.spanId);
    // Its parent is the span of the first process: the context came back from the journal.
    expect(redelivered!.parentSpanId).toBe(hop1.spanId);
    expect(redelivered!.attributes['organism.outcome']).toBe('acked');
    expect(hop3.parentSpanId).toBe(redelivered!.spanId);
    expect(new Set(spans.map((s) => s.attributes['gen_ai.conversation.id']))).toEqual(new Set([threadId]));
  }, 300_000);
});
