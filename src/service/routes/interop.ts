import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ScheduleTick } from '../../core/schedule.js';
import type { WebhookDelivery } from '../../core/webhook.js';
import type { ScheduleView } from '../../organism/schedules.js';
import type { ServiceContext } from '../context.js';
import { Type } from 'typebox';
import { SuccessFlag } from '../schemas/common.js';
import { errorResponses } from '../schemas/error.js';
import { ScheduleInfo, ScheduleListResponse, ScheduleParams, ScheduleQuery, ScheduleRequest, WebhookListResponse, WebhookQuery } from '../schemas/interop.js';
import { Errors } from '../../errors/catalogue.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function tickView(t: ScheduleTick) {
  return { tickAt: iso(t.tickAt)!, claimedAt: iso(t.claimedAt)!, outcome: t.outcome, late: t.late, threadId: t.threadId, error: t.error };
}

function scheduleView(v: ScheduleView) {
  const { spec } = v;
  return {
    name: spec.name,
    source: v.source,
    cron: spec.cron,
    timezone: spec.timezone,
    every: spec.every,
    to: spec.to,
    payload: { ...spec.payload },
    catchUp: spec.catchUp,
    nextRunAt: iso(v.nextRunAt),
    ticks: v.ticks.map(tickView),
  };
}

function deliveryView(d: WebhookDelivery) {
  return {
    id: d.id,
    webhook: d.webhook,
    event: d.event,
    state: d.state,
    attempts: d.attempts,
    nextAttemptAt: d.state === 'pending' ? iso(d.nextAttemptAt) : null,
    createdAt: iso(d.createdAt)!,
    deliveredAt: iso(d.deliveredAt),
    lastStatus: d.lastStatus,
    lastError: d.lastError,
  };
}

/** Schedules (GET/POST/DELETE /schedules) and webhooks (GET /webhooks), issue 31: thin over Organism.scheduler and .webhooks. */
export const interopRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  app.get(
    '/schedules',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Every schedule (organism.yaml and added at run time) with its next run and latest ticks',
        querystring: ScheduleQuery,
        response: { 200: ScheduleListResponse, ...errorResponses },
      },
    },
    async (request) => {
      const ticks = request.query.ticks ?? 10;
      const list = (await organism.scheduler.list(ticks)).map(scheduleView);
      return { schedules: list, count: list.length, ticks };
    },
  );

  app.get(
    '/schedules/:name',
    { schema: { tags: ['schedules'], summary: 'One schedule with its latest 50 ticks', params: ScheduleParams, response: { 200: ScheduleInfo, ...errorResponses } } },
    async (request) => {
      const view = await organism.scheduler.get(request.params.name);
      if (!view) throw Errors.SCHEDULE_NOT_FOUND(request.params.name);
      return scheduleView(view);
    },
  );

  app.post(
    '/schedules',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Adds a schedule at run time (kept in the store, fired by one process of the organism per tick)',
        body: ScheduleRequest,
        response: { 201: ScheduleInfo, ...errorResponses },
      },
    },
    async (request, reply) => {
      const b = request.body;
      await organism.addSchedule({
        name: b.name,
        cron: b.cron ?? null,
        timezone: b.timezone ?? null,
        every: b.every ?? null,
        to: b.to,
        payload: (b.payload ?? {}) as Record<string, unknown>,
        catchUp: b.catchUp ?? true,
      });
      const view = await organism.scheduler.get(b.name, 10);
      reply.code(201);
      return scheduleView(view!);
    },
  );

  app.delete(
    '/schedules/:name',
    {
      schema: {
        tags: ['schedules'],
        summary: 'Removes a schedule added at run time, with its ticks (409 for one of organism.yaml)',
        params: ScheduleParams,
        response: { 200: Type.Object({ success: SuccessFlag }), ...errorResponses },
      },
    },
    async (request) => {
      await organism.removeSchedule(request.params.name);
      return { success: true as const };
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'The configured webhooks with their delivery counts, and recent deliveries (failures with their last status and error)',
        querystring: WebhookQuery,
        response: { 200: WebhookListResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { webhook, state, limit = 50 } = request.query;
      const [views, deliveries] = await Promise.all([
        organism.webhooks.views(),
        organism.webhooks.deliveries({ ...(webhook ? { webhook } : {}), ...(state ? { state: state as WebhookDelivery['state'] } : {}), limit }),
      ]);
      return {
        webhooks: views.map((w) => ({ name: w.name, url: w.url, events: [...w.events], ...w.counts, secretProblem: w.secretProblem })),
        deliveries: deliveries.map(deliveryView),
        limit,
      };
    },
  );
};
