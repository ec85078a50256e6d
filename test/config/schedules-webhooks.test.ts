import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { WEBHOOK_EVENTS } from '../../src/core/webhook.js';
import { nextCronTime, parseCron } from '../../src/util/cron.js';
import { CONFIG_PATH, problemsOf } from './helpers.js';

const base = `organism: {name: t}
listeners:
  - name: shout
    handler: ./tools.ts#uppercase
    payload: Announcement
`;
const problems = async (extra: string) => (await problemsOf(base + extra)).map((p) => [p.keyPath, p.message]);

describe('schedules:', () => {
  it('loads cron (timezone default UTC) and interval schedules, catch_up default true', async () => {
    const loaded = await loadOrganismFromString(
      `${base}schedules:
  - {name: morning, cron: "0 9 * * 1-5", timezone: Europe/Paris, to: shout, payload: {text: hi}}
  - {name: often, every: 30s, to: shout, catch_up: false, payload: {text: often}}
  - {name: daily, cron: "@daily", to: shout, payload: {Announcement: {text: daily}}}
`,
      CONFIG_PATH,
    );
    expect(loaded.config.schedules).toEqual([
      { name: 'morning', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', every: null, to: 'shout', payload: { text: 'hi' }, catchUp: true },
      { name: 'often', cron: null, timezone: null, every: '30s', to: 'shout', payload: { text: 'often' }, catchUp: false },
      { name: 'daily', cron: '@daily', timezone: 'UTC', every: null, to: 'shout', payload: { Announcement: { text: 'daily' } }, catchUp: true },
    ]);
  });

  it('refuses bad schedules at their key path', async () => {
    expect(await problems('schedules:\n  - {name: a, cron: "0 25 * * *", to: shout}')).toEqual([['schedules[0].cron', 'invalid cron expression: Invalid value for hour: 25']]);
    expect(await problems('schedules:\n  - {name: a, cron: "0 9 * *", to: shout}')).toEqual([['schedules[0].cron', expect.stringContaining('has 4 fields; a cron expression has 5')]]);
    expect(await problems('schedules:\n  - {name: a, cron: "0 9 * * *", timezone: Europe/Pariss, to: shout}')).toEqual([
      ['schedules[0].timezone', expect.stringContaining('unknown time zone "Europe/Pariss"')],
    ]);
    expect(await problems('schedules:\n  - {name: a, every: 5 minutes, to: shout}')).toEqual([['schedules[0].every', expect.stringContaining('`every` must be')]]);
    expect(await problems('schedules:\n  - {name: a, every: 10s, timezone: UTC, to: shout}')).toEqual([
      ['schedules[0].timezone', expect.stringContaining('applies to `cron` schedules only')],
    ]);
    expect(await problems('schedules:\n  - {name: a, to: shout}')).toEqual([['schedules[0].name', expect.stringContaining('exactly one of `cron`')]]);
    expect(await problems('schedules:\n  - {name: a, every: 1m, to: shot}')).toEqual([['schedules[0].to', expect.stringContaining('did you mean `shout`?')]]);
    expect(await problems('schedules:\n  - {name: a, every: 1m, to: shout}\n  - {name: a, every: 1h, to: shout}')).toEqual([
      ['schedules[1].name', expect.stringContaining('duplicate schedule name `a`')],
    ]);
    expect(await problems('schedules:\n  - {name: a, every: 1m, to: shout, catchup: true}')).toEqual([['schedules[0].catchup', expect.stringContaining('did you mean `catch_up`?')]]);
    expect(await problems('schedules:\n  - {name: a, every: 1m, to: shout, payload: [1]}')).toEqual([['schedules[0].payload', expect.stringContaining('must be a mapping')]]);
    // The payload is checked against the target's type, as an inject would be.
    expect(await problems('schedules:\n  - {name: a, every: 1m, to: shout, payload: {txt: hi}}')).toEqual([
      ['schedules[0].payload', expect.stringMatching(/^`payload` does not fit listener `shout`: Invalid Announcement payload: .*text/)],
    ]);
  });
});

describe('webhooks:', () => {
  it('loads an entry with its defaults', async () => {
    const loaded = await loadOrganismFromString(`${base}webhooks:\n  - {url: "https://example.com/hook", events: [thread_completed, loop_detected], secret_env: HOOK_SECRET}\n`, CONFIG_PATH);
    expect(loaded.config.webhooks).toEqual([
      {
        name: 'webhook-1',
        url: 'https://example.com/hook',
        events: ['thread_completed', 'loop_detected'],
        secretEnv: 'HOOK_SECRET',
        timeoutSeconds: 10,
        maxAttempts: 12,
        initialBackoffSeconds: 5,
        maxBackoffSeconds: 3600,
      },
    ]);
  });

  it('warns when the secret variable is unset (check shows it; serve starts, its deliveries fail)', async () => {
    const loaded = await loadOrganismFromString(
      `${base}webhooks:\n  - {name: ops, url: "https://example.com/hook", events: [thread_failed], secret_env: ORGANISM_TEST_NO_SUCH_SECRET}\n`,
      CONFIG_PATH,
    );
    expect(loaded.warnings?.map((w) => [w.keyPath, w.message])).toEqual([['webhooks[0].secret_env', expect.stringContaining('the signing secret of webhook `ops`')]]);
  });

  it('refuses unknown events listing the known ones, and bad urls, secrets and retries at their key path', async () => {
    expect(await problems('webhooks:\n  - {url: "https://x.test/h", events: [thread_complete], secret_env: S}')).toEqual([
      ['webhooks[0].events[0]', `unknown webhook event \`thread_complete\`; did you mean \`thread_completed\`?; known events: ${WEBHOOK_EVENTS.join(', ')}`],
    ]);
    expect(await problems('webhooks:\n  - {url: "ftp://x.test/h", events: [thread_failed], secret_env: S}')).toEqual([['webhooks[0].url', expect.stringContaining('http:// or https://')]]);
    expect(await problems('webhooks:\n  - {url: "https://x.test/h", events: [], secret_env: S}')).toEqual([['webhooks[0].events', expect.stringContaining('lists no event')]]);
    expect(await problems('webhooks:\n  - {url: "https://x.test/h", events: [inbox_opened]}')).toEqual([['webhooks[0].secret_env', expect.stringContaining('missing required key')]]);
    expect(await problems('webhooks:\n  - {url: "https://x.test/h", events: [inbox_opened], secret_env: "whsec abc"}')).toEqual([
      ['webhooks[0].secret_env', expect.stringContaining('name of an environment variable')],
    ]);
    expect(await problems('webhooks:\n  - {url: "https://x.test/h", events: [inbox_opened], secret_env: S, retry: {initial_seconds: 10, max_seconds: 1}}')).toEqual([
      ['webhooks[0].retry.max_seconds', expect.stringContaining('is less than')],
    ]);
  });
});

describe('cron times', () => {
  it('weekdays at 9 in Paris, across the DST change; a skipped wall time fires after the gap, a repeated one fires once', () => {
    const cron = parseCron('0 9 * * 1-5');
    // Friday 2026-03-27 09:00 Paris = 08:00 UTC (CET); next: Monday 2026-03-30 09:00 = 07:00 UTC (CEST).
    expect(new Date(nextCronTime(cron, 'Europe/Paris', Date.UTC(2026, 2, 27, 7, 0))!).toISOString()).toBe('2026-03-27T08:00:00.000Z');
    expect(new Date(nextCronTime(cron, 'Europe/Paris', Date.UTC(2026, 2, 27, 8, 0))!).toISOString()).toBe('2026-03-30T07:00:00.000Z');
    // 02:30 does not exist in Paris on 2026-03-29: it fires at the first minute after the gap (03:00 CEST), as cron does.
    const gap = nextCronTime(parseCron('30 2 * * *'), 'Europe/Paris', Date.UTC(2026, 2, 28, 12))!;
    expect(new Date(gap).toISOString()).toBe('2026-03-29T01:00:00.000Z');
    expect(new Date(nextCronTime(parseCron('30 2 * * *'), 'Europe/Paris', gap)!).toISOString()).toBe('2026-03-30T00:30:00.000Z');
    // 02:30 happens twice on 2026-10-25: fired at the first (CEST, 00:30 UTC), not again at 01:30 UTC.
    const first = nextCronTime(parseCron('30 2 * * *'), 'Europe/Paris', Date.UTC(2026, 9, 24, 12))!;
    expect(new Date(first).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(new Date(nextCronTime(parseCron('30 2 * * *'), 'Europe/Paris', first)!).toISOString()).toBe('2026-10-26T01:30:00.000Z');
    // Day-of-month OR day-of-week when both are restricted; steps and names.
    expect(new Date(nextCronTime(parseCron('0 0 13 * FRI'), 'UTC', Date.UTC(2026, 0, 1))!).toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(new Date(nextCronTime(parseCron('*/15 * * JAN *'), 'UTC', Date.UTC(2026, 0, 1, 0, 7))!).toISOString()).toBe('2026-01-01T00:15:00.000Z');
    expect(nextCronTime(parseCron('0 0 30 2 *'), 'UTC', Date.UTC(2026, 0, 1))).toBeNull();
  });
});
