import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_LISTENERS, eventually, OPERATOR, organismYaml, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';
import { newWebhookSecret, WebhookReceiver } from '../support/webhook-receiver.js';

const SECRET_ENV = 'ORGANISM_TEST_WEBHOOK_SECRET';

function yamlWith(extra: string): string {
  return `${organismYaml(BASE_LISTENERS)}${extra}`;
}

describe.each(STORAGE_KINDS)('schedules over the API (%s)', (storage) => {
  let svc: Service;

  beforeAll(async () => {
    svc = await startService({
      storage,
      yaml: yamlWith(`schedules:
  - name: nightly
    cron: "0 3 * * *"
    timezone: Europe/Paris
    to: echo
    payload: {Text: {text: nightly}}
  - name: heartbeat
    every: 1s
    to: echo
    payload: {Text: {text: heartbeat}}
`),
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('a configured interval fires each tick as a new thread, listed with its thread under GET /schedules', async () => {
    const view = await eventually(async () => {
      const res = await svc.request('GET', '/api/v1/schedules', { token: VIEWER });
      const heartbeat = res.body.schedules.find((s: { name: string }) => s.name === 'heartbeat');
      return heartbeat.ticks.filter((t: { outcome: string }) => t.outcome === 'fired').length >= 2 ? res.body : null;
    }, 'two heartbeat ticks');
    const heartbeat = view.schedules.find((s: { name: string }) => s.name === 'heartbeat');
    expect(heartbeat).toMatchObject({ source: 'config', every: '1s', to: 'echo', catchUp: true, cron: null });
    const fired = heartbeat.ticks.filter((t: { outcome: string }) => t.outcome === 'fired');
    expect(new Set(fired.map((t: { threadId: string }) => t.threadId)).size).toBe(fired.length);
    const journal = await svc.request('GET', `/api/v1/journal?threadId=${fired[0].threadId}`);
    expect(journal.body.entries[0].to).toBe('echo');
    expect(journal.body.entries[0].metadata).toEqual({ schedule: 'heartbeat', scheduled_for: fired[0].tickAt });
    const nightly = view.schedules.find((s: { name: string }) => s.name === 'nightly');
    // 03:00 in Paris is 01:00 or 02:00 UTC depending on the season.
    expect(nightly.nextRunAt).toMatch(/T0[12]:00:00\.000Z$/);
    expect(nightly.timezone).toBe('Europe/Paris');
  });

  it('POST adds a schedule that fires, DELETE removes it; wrong input is a clear 4xx naming the field', async () => {
    const created = await svc.request('POST', '/api/v1/schedules', { body: { name: 'added', every: '1s', to: 'echo', payload: { Text: { text: 'added' } }, catch_up: false } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'added', source: 'api', catchUp: false });
    const again = await svc.request('POST', '/api/v1/schedules', { body: { name: 'added', every: '5m', to: 'echo', payload: { Text: { text: 'x' } } } });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('SCHEDULE_EXISTS');
    const configured = await svc.request('POST', '/api/v1/schedules', { body: { name: 'heartbeat', every: '5m', to: 'echo', payload: { Text: { text: 'x' } } } });
    expect(configured.status).toBe(409);
    await eventually(async () => {
      const res = await svc.request('GET', '/api/v1/schedules/added');
      return res.body.ticks.some((t: { outcome: string; threadId: string }) => t.outcome === 'fired' && t.threadId) || null;
    }, 'the added schedule to fire');

    const bad = [
      [{ name: 'c', cron: '61 * * * *', to: 'echo' }, 'cron', /Invalid value for minute: 61/],
      [{ name: 'c', cron: '0 9 * * 1-5', timezone: 'Mars/Olympus', to: 'echo' }, 'timezone', /unknown time zone "Mars\/Olympus"/],
      [{ name: 'c', every: '10x', to: 'echo' }, 'every', /`every` must be/],
      [{ name: 'c', every: '1s', cron: '* * * * *', to: 'echo' }, 'every', /exactly one of `cron`/],
      [{ name: 'c', every: '1s', to: 'nobody' }, 'to', /no listener is named `nobody`/],
    ] as const;
    for (const [body, where, text] of bad) {
      const res = await svc.request('POST', '/api/v1/schedules', { body: { payload: { Text: { text: 'x' } }, ...body } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.code).toBe('INVALID_SCHEDULE');
      expect(res.body.detail).toContain(`Invalid schedule, ${where}:`);
      expect(res.body.detail).toMatch(text);
    }
    const badPayload = await svc.request('POST', '/api/v1/schedules', { body: { name: 'p', every: '1s', to: 'echo', payload: { Text: { wrong: 1 } } } });
    expect(badPayload.status).toBe(422);

    const removed = await svc.request('DELETE', '/api/v1/schedules/added');
    expect(removed.status).toBe(200);
    expect((await svc.request('GET', '/api/v1/schedules/added')).status).toBe(404);
    expect((await svc.request('DELETE', '/api/v1/schedules/added')).status).toBe(404);
    const fromYaml = await svc.request('DELETE', '/api/v1/schedules/heartbeat');
    expect(fromYaml.status).toBe(409);
    expect(fromYaml.body.code).toBe('SCHEDULE_CONFIGURED');
  });

  it('the configuration view shows the schedules as organism.yaml has them; a reload that adds one applies it at once', async () => {
    // The YAML form is text (the OpenAPI check of svc.request reads JSON).
    const yaml = await (await fetch(`${svc.url}/api/v1/organism/config?format=yaml`, { headers: { authorization: `Bearer ${OPERATOR}` } })).text();
    expect(yaml).toContain('schedules:');
    expect(yaml).toMatch(/- name: heartbeat\n\s+every: 1s\n\s+to: echo\n\s+payload:\n\s+Text:\n\s+text: heartbeat\n\s+catch_up: true/);
    svc.writeConfig(
      yamlWith(`schedules:
  - {name: nightly, cron: "0 3 * * *", timezone: Europe/Paris, to: echo, payload: {Text: {text: nightly}}}
  - {name: heartbeat, every: 1s, to: echo, payload: {Text: {text: heartbeat}}}
  - {name: reloaded, every: 1s, to: echo, payload: {Text: {text: reloaded}}}
`),
    );
    const reload = await svc.request('POST', '/api/v1/organism/reload');
    expect(reload.body).toMatchObject({ success: true, changed: ['schedules.reloaded'], restartRequired: [] });
    await eventually(
      async () => (await svc.request('GET', '/api/v1/schedules/reloaded')).body.ticks?.some((t: { outcome: string }) => t.outcome === 'fired') || null,
      'the reloaded schedule to fire',
    );
  });

  it('the client lists, adds and removes schedules', async () => {
    await svc.client.schedules.add({ name: 'by-client', cron: '*/5 * * * *', to: 'echo', payload: { Text: { text: 'c' } } });
    const list = await svc.client.schedules.list();
    expect((await svc.client.webhooks.list()).webhooks).toEqual([]);
    expect(list.schedules.map((s) => s.name)).toContain('by-client');
    expect(list.schedules.find((s) => s.name === 'by-client')?.timezone).toBe('UTC');
    await svc.client.schedules.remove('by-client');
    expect((await svc.client.schedules.list()).schedules.map((s) => s.name)).not.toContain('by-client');
  });
});

describe.each(STORAGE_KINDS)('signed webhooks (%s)', (storage) => {
  let svc: Service;
  const secret = newWebhookSecret();
  const receiver = new WebhookReceiver(secret);
  let down = true;

  beforeAll(async () => {
    process.env[SECRET_ENV] = secret;
    const url = await receiver.start();
    receiver.status = () => (down ? 500 : 200);
    svc = await startService({
      storage,
      yaml: yamlWith(`webhooks:
  - name: ops
    url: ${url}?token=abc
    events: [thread_completed, thread_failed, delivery_failed]
    secret_env: ${SECRET_ENV}
    retry: {initial_seconds: 0.1, max_seconds: 0.5, max_attempts: 1000}
  - name: unset
    url: ${url}
    events: [thread_completed]
    secret_env: ORGANISM_TEST_UNSET_SECRET
    retry: {max_attempts: 2, initial_seconds: 0.1}
`),
    });
  });
  afterAll(async () => {
    await svc?.close();
    await receiver.close();
    delete process.env[SECRET_ENV];
  });

  it('while the receiver answers 500 nothing is lost: each event arrives once it recovers, signed, deduplicated by id', async () => {
    const threads: string[] = [];
    for (let i = 0; i < 5; i++) threads.push((await svc.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: `w${i}` } } } })).body.threadId);
    const failed = (await svc.request('POST', '/api/v1/inject', { body: { to: 'broken', payload: { Text: { text: 'boom' } } } })).body.threadId;
    // The receiver refuses for a while: the failures show in GET /webhooks.
    const failing = await eventually(async () => {
      const res = await svc.request('GET', '/api/v1/webhooks?webhook=ops&state=pending', { token: VIEWER });
      return res.body.deliveries.length >= 7 && res.body.deliveries.every((d: { attempts: number }) => d.attempts >= 2) ? res.body : null;
    }, 'deliveries retried while the receiver is down');
    expect(failing.deliveries[0]).toMatchObject({ webhook: 'ops', state: 'pending', lastStatus: 500, lastError: 'HTTP 500' });
    expect(failing.webhooks.find((w: { name: string }) => w.name === 'ops')).toMatchObject({ url: expect.not.stringContaining('token'), secretProblem: null });
    expect(receiver.accepted.size).toBe(0);
    expect(receiver.refusedTries).toBeGreaterThanOrEqual(7);

    down = false;
    await eventually(() => receiver.ofType('thread_completed').length >= 5 && receiver.ofType('thread_failed').length >= 1 && receiver.ofType('delivery_failed').length >= 1, 'every event');
    expect(receiver.badSignatures).toEqual([]);
    expect(new Set(receiver.ofType('thread_completed').map((w) => w.body.data.id))).toEqual(new Set(threads));
    expect(receiver.ofType('thread_failed')[0]!.body.data).toMatchObject({ id: failed, status: 'error' });
    expect(receiver.ofType('delivery_failed')[0]!.body.data).toMatchObject({ threadId: failed, to: 'broken' });
    for (const w of receiver.accepted.values()) {
      expect(w.id).toMatch(/^msg_/);
      expect(Number.isNaN(Date.parse(w.body.timestamp))).toBe(false);
    }
    const after = await eventually(async () => {
      const res = await svc.request('GET', '/api/v1/webhooks?webhook=ops', { token: VIEWER });
      const ops = res.body.webhooks.find((w: { name: string }) => w.name === 'ops');
      return ops.pending === 0 ? res.body : null;
    }, 'nothing pending');
    expect(after.webhooks.find((w: { name: string }) => w.name === 'ops')).toMatchObject({ delivered: 7, failed: 0 });
  });

  it('a webhook whose secret is unset fails its deliveries visibly, naming the variable', async () => {
    const res = await eventually(async () => {
      const r = await svc.request('GET', '/api/v1/webhooks?webhook=unset&state=failed');
      return r.body.deliveries.length > 0 ? r.body : null;
    }, 'a failed delivery');
    expect(res.webhooks.find((w: { name: string }) => w.name === 'unset').secretProblem).toContain('ORGANISM_TEST_UNSET_SECRET is unset');
    expect(res.deliveries[0]).toMatchObject({ state: 'failed', attempts: 2, lastError: expect.stringContaining('ORGANISM_TEST_UNSET_SECRET') });
  });
});
