import { afterEach, describe, expect, it } from 'vitest';
import { eventually, probe, STORAGE_KINDS, startService, VIEWER, type Service } from './fixture.js';

// Find and act (issue 27 item 5): the thread and journal lists filter by time range and text,
// and bulk kill / bulk redeliver act on ids or on every match of a filter, on every store.

let svc: Service | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

async function inject(s: Service, to: string, text: string, threadId?: string) {
  const res = await s.request('POST', '/api/v1/inject', { body: { to, payload: { Text: { text } }, ...(threadId ? { threadId } : {}) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { threadId: string; messageId: string };
}

const entry = (s: Service, id: string) => s.request('GET', `/api/v1/journal/${id}`).then((r) => r.body);
const failed = (s: Service, id: string, attempts = 1) =>
  eventually(async () => {
    const e = await entry(s, id);
    return e.deliveryState === 'FAILED' && e.attempts >= attempts ? e : null;
  }, `${id} FAILED`);
const ids = (list: Array<{ id: string }>) => list.map((x) => x.id).sort();

describe.each(STORAGE_KINDS)('find and act (%s)', (storage) => {
  it('GET /threads and /journal filter by text (payload or error) and time range, with bad input refused by name', async () => {
    svc = await startService({ storage });
    const s = svc;
    const apple = await inject(s, 'echo', 'Apple pie 100%');
    const banana = await inject(s, 'echo', 'banana split');
    const cherry = await inject(s, 'broken', 'cherry tart');
    await failed(s, cherry.messageId);
    await eventually(async () => (await s.request('GET', '/api/v1/threads?status=completed')).body.total === 2 || null, 'two threads completed');

    const threads = async (query: string) => (await s.request('GET', `/api/v1/threads?${query}`)).body;
    expect(ids((await threads('text=BANANA')).threads)).toEqual([banana.threadId]);
    expect(await threads('text=BANANA')).toMatchObject({ total: 1, searchTruncated: false });
    expect(ids((await threads('text=100%25')).threads)).toEqual([apple.threadId]);
    expect(ids((await threads('text=on%20purpose')).threads)).toEqual([cherry.threadId]); // the handler's error
    expect(ids((await threads('text=tart&agent=broken')).threads)).toEqual([cherry.threadId]);
    expect((await threads('text=tart&agent=echo')).total).toBe(0);
    expect((await threads('text=pie&status=error')).total).toBe(0);
    expect((await threads('agent=echo')).searchTruncated).toBeUndefined();

    const now = Date.now();
    const past = new Date(now - 3_600_000).toISOString();
    const future = new Date(now + 3_600_000).toISOString();
    expect((await threads(`startTime=${past}`)).total).toBe(3);
    expect((await threads(`startTime=${future}`)).total).toBe(0);
    expect((await threads(`endTime=${past}`)).total).toBe(0);
    expect((await threads(`startTime=${past}&endTime=${future}&agent=echo`)).total).toBe(2);

    const journal = async (query: string) => (await s.request('GET', `/api/v1/journal?${query}`)).body;
    const cherryEntries = await journal('text=cherry');
    expect(cherryEntries.entries.map((e: { id: string }) => e.id)).toContain(cherry.messageId);
    expect(cherryEntries.entries.every((e: { threadId: string }) => e.threadId === cherry.threadId)).toBe(true);
    expect((await journal('text=cherry&state=FAILED')).entries.map((e: { id: string }) => e.id)).toEqual([cherry.messageId]);
    expect((await journal('text=split&agent=echo')).entries.map((e: { id: string }) => e.id)).toEqual([banana.messageId]);
    expect((await journal(`startTime=${future}`)).total).toBe(0);
    expect((await journal(`startTime=${past}&endTime=${future}&state=FAILED`)).total).toBe(1);

    const refused = async (p: string) => {
      const res = await s.request('GET', p);
      return { status: res.status, code: res.body.code, detail: res.body.detail };
    };
    expect(await refused('/api/v1/threads?startTime=yesterday')).toEqual({
      status: 422,
      code: 'INVALID_TIME',
      detail: 'startTime must be an ISO 8601 date or time (e.g. 2025-01-31T12:00:00Z), not: "yesterday"',
    });
    expect(await refused(`/api/v1/journal?startTime=${future}&endTime=${past}`)).toMatchObject({ status: 422, code: 'INVALID_TIME_RANGE' });
    expect(await refused(`/api/v1/journal?text=${'x'.repeat(201)}`)).toMatchObject({ status: 422, code: 'INVALID_REQUEST' });
    expect(await refused('/api/v1/threads?text=a%07b')).toMatchObject({
      status: 422,
      code: 'INVALID_REQUEST',
      detail: expect.stringContaining('text contains the control character U+0007'),
    });
    expect(await refused('/api/v1/threads?since=2025-01-01')).toMatchObject({ status: 422, detail: expect.stringContaining('since is not a parameter of this route') });
  });

  it('POST /threads/kill kills every active thread a filter matches, or the ids given, and says what it skipped and why', async () => {
    svc = await startService({ storage });
    const s = svc;
    const jobs = [await inject(s, 'slow', 'job-1'), await inject(s, 'slow', 'job-2'), await inject(s, 'slow', 'job-3')];
    const other = await inject(s, 'slow', 'other-1');
    const done = await inject(s, 'echo', 'job-done');
    await eventually(() => ['job-1', 'job-2', 'job-3', 'other-1'].every((t) => probe().release.has(t)) || null, 'slow handlers running');
    await eventually(async () => (await s.request('GET', '/api/v1/threads?status=completed')).body.total === 1 || null, 'echo thread completed');

    const res = await s.request('POST', '/api/v1/threads/kill', { body: { filter: { agent: 'slow', text: 'JOB-' } } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ matched: 3, attempted: 3, killed: 3, skipped: [], searchTruncated: false });
    const killed = (await s.request('GET', '/api/v1/threads?status=killed')).body.threads;
    expect(ids(killed)).toEqual(ids(jobs.map((j) => ({ id: j.threadId }))));
    expect((await s.request('GET', `/api/v1/threads/${other.threadId}`)).body.status).toBe('active');

    const again = await s.request('POST', '/api/v1/threads/kill', { body: { threadIds: [jobs[0]!.threadId, done.threadId, 'no-such-thread', done.threadId] } });
    expect(again.body).toEqual({
      matched: 3,
      attempted: 3,
      killed: 0,
      skipped: [
        { id: jobs[0]!.threadId, code: 'THREAD_FINISHED', detail: `Thread already finished: ${jobs[0]!.threadId}` },
        { id: done.threadId, code: 'THREAD_FINISHED', detail: `Thread already finished: ${done.threadId}` },
        { id: 'no-such-thread', code: 'THREAD_NOT_FOUND', detail: 'Thread not found: no-such-thread' },
      ],
    });
    const byIds = await s.request('POST', '/api/v1/threads/kill', { body: { threadIds: [other.threadId] } });
    expect(byIds.body).toMatchObject({ matched: 1, attempted: 1, killed: 1, skipped: [] });
    // A filter that matches nothing active does nothing.
    expect((await s.request('POST', '/api/v1/threads/kill', { body: { filter: { agent: 'slow' } } })).body).toEqual({ matched: 0, attempted: 0, killed: 0, skipped: [] });
  });

  it('POST /journal/redeliver redelivers FAILED entries by id or by filter, skipping the rest with reasons', async () => {
    svc = await startService({ storage });
    const s = svc;
    const r = [await inject(s, 'broken', 'r-1'), await inject(s, 'broken', 'r-2'), await inject(s, 'broken', 'r-3')];
    for (const x of r) await failed(s, x.messageId);
    const acked = await inject(s, 'echo', 'fine');
    await eventually(async () => (await entry(s, acked.messageId)).deliveryState === 'ACKED' || null, 'echo ACKED');

    const res = await s.request('POST', '/api/v1/journal/redeliver', { body: { messageIds: [r[0]!.messageId, r[1]!.messageId, acked.messageId, 'no-such-entry'] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      matched: 4,
      attempted: 4,
      redelivered: 2,
      skipped: [
        { id: acked.messageId, code: 'JOURNAL_NOT_REDELIVERABLE', detail: `Journal entry ${acked.messageId} is ACKED; only FAILED entries can be redelivered` },
        { id: 'no-such-entry', code: 'JOURNAL_ENTRY_NOT_FOUND', detail: 'Journal entry not found: no-such-entry' },
      ],
    });
    // Delivered again (attempt 2), they fail again: broken always does.
    await failed(s, r[0]!.messageId, 2);
    await failed(s, r[1]!.messageId, 2);
    expect((await entry(s, r[2]!.messageId)).attempts).toBe(1);

    const byFilter = await s.request('POST', '/api/v1/journal/redeliver', { body: { filter: { agent: 'broken', text: 'r-3' } } });
    expect(byFilter.body).toEqual({ matched: 1, attempted: 1, redelivered: 1, skipped: [], searchTruncated: false });
    await failed(s, r[2]!.messageId, 2);

    // A killed thread's entry is not redelivered: skipped with the 409 the single route answers.
    await inject(s, 'slow', 'keeps r-1 alive', r[0]!.threadId);
    await eventually(() => probe().release.has('keeps r-1 alive') || null, 'slow handler to start');
    expect((await s.request('POST', `/api/v1/threads/${r[0]!.threadId}/kill`)).status).toBe(200);
    const all = await s.request('POST', '/api/v1/journal/redeliver', { body: { filter: { agent: 'broken' } } });
    expect(all.body).toMatchObject({ matched: 3, attempted: 3, redelivered: 2 });
    expect(all.body.skipped).toEqual([{ id: r[0]!.messageId, code: 'THREAD_KILLED', detail: `Thread ${r[0]!.threadId} was killed; it accepts no more messages` }]);
    expect((await entry(s, r[0]!.messageId)).deliveryState).toBe('FAILED');
  });

  it('bulk bodies must name ids or a filter (not both, not neither), and bulk actions are operator-only', async () => {
    svc = await startService({ storage });
    const s = svc;
    const post = async (p: string, body: unknown, token?: string) => {
      const res = await s.request('POST', p, { body, ...(token ? { token } : {}) });
      return { status: res.status, code: res.body.code, detail: res.body.detail };
    };
    expect(await post('/api/v1/threads/kill', {})).toEqual({
      status: 422,
      code: 'BULK_SELECTION',
      detail: 'Give threadIds (the ones to act on) or filter (every match of the list filter): got neither',
    });
    expect(await post('/api/v1/journal/redeliver', { messageIds: ['a'], filter: {} })).toMatchObject({ status: 422, code: 'BULK_SELECTION', detail: expect.stringContaining('got both') });
    expect(await post('/api/v1/threads/kill', { threadIds: [] })).toMatchObject({ status: 422, code: 'INVALID_REQUEST' });
    expect(await post('/api/v1/threads/kill', { threadIds: Array.from({ length: 1001 }, (_, i) => `t${i}`) })).toMatchObject({ status: 422, code: 'INVALID_REQUEST' });
    expect(await post('/api/v1/threads/kill', { filter: { status: 'completed' } })).toMatchObject({ status: 422, code: 'INVALID_REQUEST' });
    expect(await post('/api/v1/journal/redeliver', { filter: { startTime: 'soon' } })).toMatchObject({ status: 422, code: 'INVALID_TIME' });
    expect(await post('/api/v1/journal/redeliver', { filter: { text: 'a\u0000b' } })).toMatchObject({
      status: 422,
      code: 'INVALID_REQUEST',
      detail: 'filter.text contains the control character U+0000 at position 1; search text must be printable',
    });
    // The list's own ?text= says the same (not that "identifiers" are printable: it is no identifier).
    const listed = await s.request('GET', '/api/v1/journal?text=a%00b');
    expect(listed.status).toBe(422);
    expect(listed.body.errors).toEqual([{ location: 'querystring', field: 'text', message: 'contains the control character U+0000 at position 1; search text must be printable' }]);
    expect(await post('/api/v1/threads/kill', { threadIds: ['x'] }, VIEWER)).toMatchObject({ status: 403 });
    expect(await post('/api/v1/journal/redeliver', { messageIds: ['x'] }, VIEWER)).toMatchObject({ status: 403 });
  });
});
