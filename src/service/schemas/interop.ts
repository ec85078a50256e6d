import { Type } from 'typebox';
import { AnyObject, Name, Nullable, NullableString, NullableTimestamp, Timestamp } from './common.js';

export const ScheduleTickInfo = Type.Object(
  {
    tickAt: Timestamp,
    claimedAt: Timestamp,
    outcome: Nullable(
      Type.String({
        description:
          'fired: injected (threadId); skipped: missed while no process ran, catch_up false; failed: the inject was refused (error); null: being injected (a tick whose process stopped meanwhile is taken over after a minute)',
      }),
    ),
    late: Type.Boolean({ description: 'A catch-up: fired (or skipped) after downtime, not on time' }),
    threadId: NullableString,
    error: NullableString,
  },
  { title: 'ScheduleTick' },
);

export const ScheduleInfo = Type.Object(
  {
    name: Type.String(),
    source: Type.String({ enum: ['config', 'api'], description: 'config: organism.yaml `schedules:`; api: added with POST /schedules (kept in the store)' }),
    cron: NullableString,
    timezone: NullableString,
    every: NullableString,
    to: Type.String(),
    payload: AnyObject,
    catchUp: Type.Boolean(),
    nextRunAt: NullableTimestamp,
    ticks: Type.Array(ScheduleTickInfo, { description: 'The latest ticks, newest first' }),
  },
  { title: 'Schedule' },
);

export const ScheduleListResponse = Type.Object(
  { schedules: Type.Array(ScheduleInfo), count: Type.Integer(), ticks: Type.Integer({ description: "The latest ticks listed per schedule (the query's ticks, default 10)" }) },
  { title: 'ScheduleListResponse' },
);

export const ScheduleRequest = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    cron: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: '5 fields: minute hour day-of-month month day-of-week (or @daily, ...); exactly one of cron and every' })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of cron (default UTC)' })),
    every: Type.Optional(Type.String({ minLength: 2, maxLength: 32, description: '30s, 5m, 1h, 1d: ticks at the multiples of the interval since the Unix epoch' })),
    to: Type.String({ minLength: 1, maxLength: 256 }),
    payload: Type.Optional(AnyObject),
    catchUp: Type.Optional(Type.Boolean({ description: 'Fire one missed tick when a process starts again (default true)' })),
  },
  { title: 'ScheduleRequest', additionalProperties: false },
);

export const ScheduleParams = Type.Object({ name: Name });
export const ScheduleQuery = Type.Object({ ticks: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: 10, description: 'Latest ticks listed per schedule' })) });

export const WebhookDeliveryInfo = Type.Object(
  {
    id: Type.String({ description: 'The webhook-id header: the receiver deduplicates by it' }),
    webhook: Type.String(),
    event: Type.String(),
    state: Type.String({ enum: ['pending', 'delivered', 'failed'], description: 'pending: waiting for its first or next try; failed: given up after the max attempts' }),
    attempts: Type.Integer(),
    nextAttemptAt: NullableTimestamp,
    createdAt: Timestamp,
    deliveredAt: NullableTimestamp,
    lastStatus: Nullable(Type.Integer({ description: 'HTTP status of the last try; null: no answer' })),
    lastError: NullableString,
  },
  { title: 'WebhookDelivery' },
);

export const WebhookInfo = Type.Object(
  {
    name: Type.String(),
    url: Type.String({ description: 'Without its query string' }),
    events: Type.Array(Type.String()),
    pending: Type.Integer(),
    delivered: Type.Integer(),
    failed: Type.Integer(),
    secretProblem: Nullable(Type.String({ description: 'Why deliveries cannot be signed (secret variable unset or malformed); null: fine' })),
  },
  { title: 'Webhook' },
);

export const WebhookListResponse = Type.Object(
  {
    webhooks: Type.Array(WebhookInfo),
    deliveries: Type.Array(WebhookDeliveryInfo, { description: 'Recent deliveries, newest first' }),
    limit: Type.Integer({ description: "The most deliveries listed (the query's limit, default 50)" }),
  },
  { title: 'WebhookListResponse' },
);

export const WebhookQuery = Type.Object({
  webhook: Type.Optional(Name),
  state: Type.Optional(Type.String({ enum: ['pending', 'delivered', 'failed'] })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});
