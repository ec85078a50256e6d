import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { eventually, OPERATOR, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

const DEMO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'demo');
const DEMO_YAML = readFileSync(path.join(DEMO_DIR, 'organism.yaml'), 'utf8');
const DEMO_TOOLS = readFileSync(path.join(DEMO_DIR, 'tools.ts'), 'utf8');
/** The demo plus a listener that always fails (a delivery to redeliver). */
const YAML = `${DEMO_YAML.trimEnd()}\n\n  - name: flaky\n    description: Always fails\n    handler: ./fail.ts#fail\n    payload: Announcement\n    peers: []\n`;
const FAIL = `export const fail = () => { throw new Error('flaky by design'); };\n`;

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

interface Waterfall {
  threadId: string;
  status: string;
  now: string;
  record: string;
  truncated: boolean;
  deliveries: Array<Record<string, unknown> & { messageId: string; state: string; earlierAttempts: Array<Record<string, unknown>> }>;
  calls: Array<Record<string, unknown> & { messageId: string; toolExecutions: unknown[] }>;
}

describe.each(STORAGE_KINDS)('GET /threads/{id}/waterfall (%s)', (storage) => {
  it("gives every delivery's and LLM call's timings of a thread, to viewers too, with no prompt or answer", async () => {
    const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': DEMO_TOOLS, 'fail.ts': FAIL } });
    services.push(s);
    const { threadId } = (await s.request('POST', '/api/v1/inject', { body: { to: 'researcher', payload: { text: 'tide pools' } } })).body as { threadId: string };
    await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'the demo thread to complete');

    const res = await s.request('GET', `/api/v1/threads/${threadId}/waterfall`, { token: VIEWER });
    expect(res.status).toBe(200);
    const w = res.body as Waterfall;
    expect(w).toMatchObject({ threadId, status: 'completed', record: 'full', truncated: false });
    expect(w.deliveries.map((d) => `${d.from}->${d.to} ${d.state}`)).toEqual(['api->researcher ACKED', 'researcher->writer ACKED', 'writer->announcer ACKED']);
    for (const d of w.deliveries) {
      const [created, dispatched, acked] = [d.createdAt, d.dispatchedAt, d.ackedAt].map((t) => Date.parse(String(t)));
      expect(created).toBeLessThanOrEqual(dispatched!);
      expect(dispatched).toBeLessThanOrEqual(acked!);
      expect(d).toMatchObject({ attempts: 1, failedAt: null, earlierAttempts: [] });
    }
    // One call per LLM delivery, inside its handler time; the same calls as the operators' route.
    const full = (await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`)).body as { calls: Array<{ id: string; latencyMs: number; usage: { totalTokens: number } }> };
    expect(w.calls.map((c) => c.id)).toEqual(full.calls.map((c) => c.id));
    expect(w.calls.map((c) => [c.agent, c.messageId])).toEqual([
      ['researcher', w.deliveries[0]!.messageId],
      ['writer', w.deliveries[1]!.messageId],
    ]);
    for (const [i, c] of w.calls.entries()) {
      const d = w.deliveries[i]!;
      expect(Date.parse(String(c.startedAt))).toBeGreaterThanOrEqual(Date.parse(String(d.dispatchedAt)));
      expect(Date.parse(String(c.startedAt)) + Number(c.latencyMs)).toBeLessThanOrEqual(Date.parse(String(d.ackedAt)) + 1);
      expect(c).toMatchObject({ attempt: 1, repair: false, error: null, finishReason: 'tool_calls', latencyMs: full.calls[i]!.latencyMs, toolExecutions: [] });
      expect((c.usage as { totalTokens: number }).totalTokens).toBe(full.calls[i]!.usage.totalTokens);
      // Timings only: nothing of what the model was sent or answered.
      expect(Object.keys(c)).not.toEqual(expect.arrayContaining(['request']));
      expect(JSON.stringify(c)).not.toContain('tide pools');
    }
    expect(JSON.stringify(w.deliveries)).not.toContain('tide pools');

    expect((await s.request('GET', '/api/v1/threads/nope/waterfall', { token: VIEWER })).status).toBe(404);
    const client = createClient({ baseUrl: s.url, token: OPERATOR });
    expect((await client.threads.waterfall(threadId)).deliveries).toHaveLength(3);
    const doc = (await s.request('GET', '/api/v1/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/api/v1/threads/{threadId}/waterfall');
  });

  it('a redelivered delivery shows each attempt: the earlier one failed, with its times and error', async () => {
    const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': DEMO_TOOLS, 'fail.ts': FAIL } });
    services.push(s);
    const { threadId, messageId } = (await s.request('POST', '/api/v1/inject', { body: { to: 'flaky', payload: { text: 'x' } } })).body as { threadId: string; messageId: string };
    const failedOnce = await eventually(async () => {
      const w = (await s.request('GET', `/api/v1/threads/${threadId}/waterfall`)).body as Waterfall;
      return w.deliveries[0]?.state === 'FAILED' ? w.deliveries[0] : null;
    }, 'the first attempt to fail');
    expect(failedOnce).toMatchObject({ attempts: 1, failureReason: 'handler_error', earlierAttempts: [] });
    expect((await s.request('POST', `/api/v1/journal/${messageId}/redeliver`)).status).toBe(200);
    const second = await eventually(async () => {
      const w = (await s.request('GET', `/api/v1/threads/${threadId}/waterfall`)).body as Waterfall;
      return w.deliveries[0]?.state === 'FAILED' && w.deliveries[0].attempts === 2 ? w.deliveries[0] : null;
    }, 'the second attempt to fail');
    expect(second.earlierAttempts).toEqual([
      {
        attempt: 1,
        dispatchedAt: failedOnce.dispatchedAt,
        endedAt: failedOnce.failedAt,
        outcome: 'failed',
        failureReason: 'handler_error',
        error: failedOnce.error,
        requeuedAt: expect.any(String),
      },
    ]);
    expect(Date.parse(String(second.dispatchedAt))).toBeGreaterThanOrEqual(Date.parse(String(second.earlierAttempts[0]!.requeuedAt)));
    // The journal entry says the same.
    expect((await s.request('GET', `/api/v1/journal/${messageId}`)).body.earlierAttempts).toEqual(second.earlierAttempts);
  });
});
