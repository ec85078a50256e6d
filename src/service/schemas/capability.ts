import { Type } from 'typebox';
import { AnyObject, Name, NullableString } from './common.js';

export const CapabilityInfo = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    isAgent: Type.Boolean(),
    peers: Type.Array(Type.String()),
    rootTag: Type.String({ description: 'XML root tag of the payload it accepts (with several types: the first)' }),
    rootTags: Type.Optional(Type.Array(Type.String(), { description: 'The root tag of each payload type it accepts; present only when it accepts several' })),
  },
  { title: 'CapabilityInfo' },
);

export const CapabilityDetail = Type.Object(
  {
    ...CapabilityInfo.properties,
    payloadClass: Type.String(),
    schemaXsd: Type.String(),
    exampleXml: Type.String(),
    jsonSchema: AnyObject,
    prompt: NullableString,
    replyFormat: Type.Unsafe<'tools' | 'xml' | null>({ type: ['string', 'null'], enum: ['tools', 'xml', null], description: 'How this LLM agent answers (null: a code tool)' }),
    toolCall: Type.Object(
      { name: Type.String({ description: 'The tool (send_to_<name>) an LLM agent answering with tool calls uses to send here' }), arguments: AnyObject },
      { description: 'An example call of that tool: its arguments are one payload of the accepted type' },
    ),
    tools: Type.Array(Type.String(), {
      description:
        'The tools this LLM agent answers with, when it answers with tool calls: send_to_<peer> per peer, reply, its code tools (tools: in organism.yaml) by name, and <server>_* for the tools of each MCP server it is given',
    }),
    payloadTypes: Type.Optional(
      Type.Array(Type.Object({ name: Type.String(), schemaXsd: Type.String(), exampleXml: Type.String(), jsonSchema: AnyObject, example: AnyObject }), {
        description:
          'Present only when it accepts several payload types: each with its schemas and an example payload. The top-level schemaXsd, exampleXml and jsonSchema then describe the first type; an inject names the type ({"<Type>": {...}}), and so does the toolCall',
      }),
    ),
    senders: Type.Array(
      Type.Object({
        name: Type.String(),
        form: Type.Enum(['tools', 'xml', 'code'], { description: 'tools: a tool call; xml: an XML <send> block; code: a code tool returning the payload' }),
      }),
      { description: 'The listeners that have this one as a peer, and how each sends' },
    ),
  },
  { title: 'CapabilityDetail' },
);

export const CapabilityListResponse = Type.Object({ capabilities: Type.Array(CapabilityInfo), count: Type.Integer() }, { title: 'CapabilityListResponse' });

export const CapabilityParams = Type.Object({ name: Name });
