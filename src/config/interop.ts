import { isMap } from 'yaml';
import type { ScheduleSpec } from '../core/schedule.js';
import { WEBHOOK_EVENTS, type WebhookConfig, type WebhookEvent } from '../core/webhook.js';
import { checkTimeZone, CronError, parseCron, parseInterval } from '../util/cron.js';
import { ConfigMessages } from './messages.js';
import { MapReader, type ProblemSink } from './reader.js';
import { Keys } from './schema.js';
import { closest } from './suggest.js';

/** An entry read from YAML, kept with its reader so later checks can point into the file (as document.ts's Located). */
interface Located<T> {
  readonly value: T;
  readonly at: MapReader;
}

const SCHEDULE_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const WebhookDefaults = { timeoutSeconds: 10, maxAttempts: 12, initialBackoffSeconds: 5, maxBackoffSeconds: 3600 } as const;

/** A problem with one key of a schedule (organism.yaml or a POST /schedules body). */
export interface ScheduleProblem {
  readonly key: keyof ScheduleSpec | 'name';
  readonly message: string;
}

/**
 * What is wrong with a schedule's own fields (its target is checked against the listeners
 * elsewhere): the name, exactly one of `cron` and `every`, the expression, the time zone.
 */
export function scheduleProblems(spec: Pick<ScheduleSpec, 'name' | 'cron' | 'timezone' | 'every'>): ScheduleProblem[] {
  const out: ScheduleProblem[] = [];
  if (!SCHEDULE_NAME.test(spec.name)) out.push({ key: 'name', message: ConfigMessages.invalidName('schedule', spec.name) });
  if ((spec.cron === null) === (spec.every === null)) out.push({ key: spec.cron === null ? 'name' : 'every', message: ConfigMessages.scheduleNeedsOneTime() });
  if (spec.cron !== null) {
    try {
      parseCron(spec.cron);
    } catch (err) {
      if (!(err instanceof CronError)) throw err;
      out.push({ key: 'cron', message: ConfigMessages.badCron(err.message) });
    }
  }
  if (spec.timezone !== null) {
    if (spec.cron === null) out.push({ key: 'timezone', message: ConfigMessages.timezoneWithoutCron() });
    else {
      try {
        checkTimeZone(spec.timezone);
      } catch (err) {
        if (!(err instanceof CronError)) throw err;
        out.push({ key: 'timezone', message: err.message });
      }
    }
  }
  if (spec.every !== null && parseInterval(spec.every) === null) out.push({ key: 'every', message: ConfigMessages.badInterval(spec.every) });
  return out;
}

/** `schedules:` entries, each checked by itself. */
export function readSchedules(sink: ProblemSink, items: readonly { node: import('yaml').Node; path: string }[]): Located<ScheduleSpec>[] {
  return items.flatMap((item) => {
    const r = MapReader.open(sink, item.node, item.path, Keys.schedule);
    if (!r) return [];
    const payloadNode = r.valueNode('payload');
    let payload: Record<string, unknown> = {};
    if (payloadNode !== null) {
      if (isMap(payloadNode)) payload = (payloadNode.toJSON() ?? {}) as Record<string, unknown>;
      else r.problem('payload', ConfigMessages.schedulePayloadShape());
    }
    const spec: ScheduleSpec = {
      name: r.string('name', true) ?? '',
      cron: r.has('cron') ? (r.string('cron') ?? '') : null,
      timezone: r.has('timezone') ? (r.string('timezone') ?? 'UTC') : null,
      every: r.has('every') ? (r.string('every') ?? '') : null,
      to: r.string('to', true) ?? '',
      payload,
      catchUp: r.boolean('catch_up', true),
    };
    if (spec.name !== '') for (const p of scheduleProblems(spec)) r.problem(p.key, p.message);
    return [{ value: spec.cron !== null && spec.timezone === null ? { ...spec, timezone: 'UTC' } : spec, at: r }];
  });
}

/** `webhooks:` entries, each checked by itself (event names against the known ones). */
export function readWebhooks(sink: ProblemSink, items: readonly { node: import('yaml').Node; path: string }[]): Located<WebhookConfig>[] {
  return items.flatMap((item, i) => {
    const r = MapReader.open(sink, item.node, item.path, Keys.webhook);
    if (!r) return [];
    const url = r.string('url', true) ?? '';
    if (url !== '' && !/^https?:\/\/[^\s]+$/.test(url)) r.problem('url', ConfigMessages.badUrl(JSON.stringify(url)));
    const events: WebhookEvent[] = [];
    const listed = r.list('events', true) ?? [];
    if (r.has('events') && listed.length === 0) r.problem('events', ConfigMessages.webhookNoEvents([...WEBHOOK_EVENTS]));
    for (const e of listed) {
      const value = (e.node as { value?: unknown }).value;
      if (typeof value === 'string' && (WEBHOOK_EVENTS as readonly string[]).includes(value)) events.push(value as WebhookEvent);
      else sink.add(e.node, e.path, ConfigMessages.unknownWebhookEvent(String(value), closest(String(value), WEBHOOK_EVENTS), [...WEBHOOK_EVENTS]));
    }
    const secretEnv = r.string('secret_env', true) ?? '';
    if (secretEnv !== '' && !ENV_NAME.test(secretEnv)) r.problem('secret_env', ConfigMessages.badEnvName('secret_env'));
    const retry = r.map('retry', Keys.webhookRetry);
    const initial = retry?.number('initial_seconds', WebhookDefaults.initialBackoffSeconds, true) ?? WebhookDefaults.initialBackoffSeconds;
    const max = retry?.number('max_seconds', WebhookDefaults.maxBackoffSeconds, true) ?? WebhookDefaults.maxBackoffSeconds;
    if (retry && max < initial) retry.problem('max_seconds', ConfigMessages.retryMaxBelowInitial(initial, max));
    return [
      {
        value: {
          name: r.string('name') ?? `webhook-${i + 1}`,
          url,
          events: [...new Set(events)],
          secretEnv,
          timeoutSeconds: r.number('timeout_seconds', WebhookDefaults.timeoutSeconds, true),
          maxAttempts: retry?.integer('max_attempts', WebhookDefaults.maxAttempts, 1) ?? WebhookDefaults.maxAttempts,
          initialBackoffSeconds: initial,
          maxBackoffSeconds: max,
        },
        at: r,
      },
    ];
  });
}

/** Schedules' targets are listeners; names are unique. */
export function checkInterop(sink: ProblemSink, schedules: readonly Located<ScheduleSpec>[], webhooks: readonly Located<WebhookConfig>[], listeners: readonly string[]): void {
  const seen = new Map<string, number | null>();
  for (const { value, at } of schedules) {
    if (value.to !== '' && !listeners.includes(value.to)) at.problem('to', ConfigMessages.scheduleUnknownTarget(value.to, closest(value.to, listeners)));
    if (value.name === '') continue;
    if (seen.has(value.name)) at.problem('name', ConfigMessages.duplicateName('schedule', value.name, seen.get(value.name) ?? null));
    else seen.set(value.name, sink.lineOf(at.nodeFor('name')));
  }
  const hooks = new Map<string, number | null>();
  for (const { value, at } of webhooks) {
    if (hooks.has(value.name)) at.problem('name', ConfigMessages.duplicateName('webhook', value.name, hooks.get(value.name) ?? null));
    else hooks.set(value.name, sink.lineOf(at.nodeFor('name')));
  }
}
