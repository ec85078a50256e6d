import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import type { AgentInfo as LiveAgent } from '../../organism/views.js';
import { Errors } from '../../errors/catalogue.js';
import type { ServiceContext } from '../context.js';
import { AgentConfig, AgentInfo, AgentListResponse, AgentParams, AgentSchemaResponse, PauseResponse, ResumeResponse } from '../schemas/agent.js';
import { errorResponses } from '../schemas/error.js';
import { listenerConfigView, listenerView } from '../views.js';
import { AgentListBody } from '../agent-list.js';
import type { PayloadType } from '../../payload/index.js';
import { unionXsd } from '../../payload/union.js';

export const agentRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['agents'];

  // Read afresh on every request; serialized again only when a figure changed (agent-list.ts).
  // A plain handler: embedded, the figures come at once and the answer goes out in the same turn
  // (no promise made for it); a cluster's come from its store.
  const list = new AgentListBody();
  const answer = (reply: FastifyReply, agents: readonly LiveAgent[]): void => {
    const body = list.of(agents, (all) => {
      const listeners = all.map(listenerView);
      // The route's own serializer (its response schema), as for any returned object.
      return reply.serialize({ agents: listeners, count: listeners.length }) as string;
    });
    reply.type('application/json; charset=utf-8').send(body);
  };
  app.get('/agents', { schema: { tags, summary: 'Every listener (isAgent tells agents from tools)', response: { 200: AgentListResponse, ...errorResponses } } }, (_request, reply) => {
    const agents = organism.liveAgents();
    if (agents instanceof Promise) return agents.then((a) => answer(reply, a));
    answer(reply, agents);
  });

  app.get('/agents/:name', { schema: { tags, params: AgentParams, response: { 200: AgentInfo, ...errorResponses } } }, async (request) =>
    listenerView(await organism.liveAgent(request.params.name)),
  );

  app.get('/agents/:name/config', { schema: { tags, params: AgentParams, response: { 200: AgentConfig, ...errorResponses } } }, async (request) =>
    listenerConfigView(organism.agent(request.params.name)),
  );

  app.get(
    '/agents/:name/schema',
    { schema: { tags, summary: 'XSD of the payload the agent accepts', params: AgentParams, response: { 200: AgentSchemaResponse, ...errorResponses } } },
    async (request) => {
      const { name } = request.params;
      const listener = organism.agents().find((a) => a.name === name);
      const types = listener ? (listener.payloadClasses ?? [listener.payloadClass]).map((t) => organism.registry.get(t)) : [];
      const [type] = types;
      if (!type || types.some((t) => !t)) throw Errors.SCHEMA_NOT_FOUND(name);
      return { schema: types.length > 1 ? unionXsd(types as PayloadType[]) : type.xsd(), contentType: 'application/xml' as const };
    },
  );

  app.post(
    '/agents/:name/pause',
    { schema: { tags, summary: 'Hold new messages (in-flight work finishes)', params: AgentParams, response: { 200: PauseResponse, ...errorResponses } } },
    async (request) => {
      const { name } = request.params;
      await organism.pauseListener(name);
      return { success: true as const, agent: name, state: 'paused' as const };
    },
  );

  app.post(
    '/agents/:name/resume',
    { schema: { tags, summary: 'Release held messages in order', params: AgentParams, response: { 200: ResumeResponse, ...errorResponses } } },
    async (request) => {
      const { name } = request.params;
      await organism.resumeListener(name);
      return { success: true as const, agent: name, state: 'idle' as const };
    },
  );
};
