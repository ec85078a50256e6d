import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { codeToolName } from '../../config/tools.js';
import { Errors } from '../../errors/catalogue.js';
import { peerToolName, REPLY_TOOL } from '../../llm/tool-names.js';
import { replyFormatOf } from '../../organism/reply-format.js';
import type { PayloadType } from '../../payload/index.js';
import { unionExample } from '../../payload/union.js';
import type { ServiceContext } from '../context.js';
import { CapabilityDetail, CapabilityListResponse, CapabilityParams } from '../schemas/capability.js';
import { errorResponses } from '../schemas/error.js';

/** The capability listing: operators only (agents know only their declared peers). */
export const capabilityRoutes: FastifyPluginAsyncTypebox<ServiceContext> = async (app, { organism }) => {
  const tags = ['capabilities'];
  const config = { access: 'operator' as const };

  app.get('/capabilities', { config, schema: { tags, summary: 'All registered listeners (operator only)', response: { 200: CapabilityListResponse, ...errorResponses } } }, async () => {
    const capabilities = organism.agents().map((a) => ({
      name: a.name,
      description: a.description,
      isAgent: a.isAgent,
      peers: [...a.peers],
      rootTag: a.payloadClass,
      ...(a.payloadClasses ? { rootTags: [...a.payloadClasses] } : {}),
    }));
    return { capabilities, count: capabilities.length };
  });

  app.get(
    '/capabilities/:name',
    {
      config,
      schema: {
        tags,
        summary: 'One listener with its payload schema (XSD and JSON Schema) and an example (operator only)',
        params: CapabilityParams,
        response: { 200: CapabilityDetail, ...errorResponses },
      },
    },
    async (request) => {
      const { name } = request.params;
      const a = organism.agents().find((x) => x.name === name);
      if (!a) throw Errors.CAPABILITY_NOT_FOUND(name);
      const types = (a.payloadClasses ?? [a.payloadClass]).map((t) => organism.registry.get(t));
      const type = types[0];
      if (!type || types.some((t) => !t)) throw Errors.SCHEMA_NOT_FOUND(name);
      const several = a.payloadClasses ? (types as PayloadType[]) : null;
      const config = organism.config;
      const listener = config.listeners.find((l) => l.name === name);
      // How each listener that may send here does it: an LLM agent by its reply format (a tool
      // call, or XML), a code tool by returning the payload.
      const senders = config.listeners.filter((l) => l.peers.includes(name)).map((l) => ({ name: l.name, form: l.agent ? replyFormatOf(l, config) : ('code' as const) }));
      return {
        name: a.name,
        description: a.description,
        isAgent: a.isAgent,
        peers: [...a.peers],
        rootTag: a.payloadClass,
        ...(several ? { rootTags: several.map((t) => t.name) } : {}),
        payloadClass: a.payloadClass,
        schemaXsd: type.xsd(),
        exampleXml: type.exampleXml(),
        jsonSchema: type.jsonSchema() as Record<string, unknown>,
        prompt: listener?.agent ? listener.prompt : null,
        replyFormat: listener?.agent ? replyFormatOf(listener, config) : null,
        toolCall: { name: peerToolName(name), arguments: several ? unionExample(several) : type.exampleValue() },
        ...(several
          ? {
              payloadTypes: several.map((t) => ({
                name: t.name,
                schemaXsd: t.xsd(),
                exampleXml: t.exampleXml(),
                jsonSchema: t.jsonSchema() as Record<string, unknown>,
                example: t.exampleValue(),
              })),
            }
          : {}),
        tools:
          listener?.agent && replyFormatOf(listener, config) === 'tools'
            ? [...listener.peers.map(peerToolName), REPLY_TOOL, ...(listener.tools ?? []).map(codeToolName), ...(listener.mcpServers ?? []).map((m) => `${m}_*`)]
            : [],
        senders,
      };
    },
  );
};
