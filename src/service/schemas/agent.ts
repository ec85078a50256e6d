import { Type } from 'typebox';
import { Name, Nullable, NullableString, NullableTimestamp, SuccessFlag } from './common.js';

export const AgentState = Type.Enum(['idle', 'processing', 'waiting', 'error', 'paused']);

export const AgentConfig = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    isAgent: Type.Boolean(),
    peers: Type.Array(Type.String()),
    payloadClass: Type.String({ description: 'Name of the payload type it accepts (with several: the first)' }),
    payloadClasses: Type.Optional(
      Type.Array(Type.String(), { description: 'Every payload type it accepts, in order; present only when it accepts several (`payload: [A, B]` in organism.yaml)' }),
    ),
  },
  { title: 'AgentConfig' },
);

export const AgentInfo = Type.Object(
  {
    ...AgentConfig.properties,
    state: AgentState,
    currentThread: NullableString,
    queueDepth: Type.Integer(),
    lastActivity: NullableTimestamp,
    messageCount: Type.Integer(),
    model: Nullable(Type.String({ description: 'LLM model (agents only)' })),
  },
  { title: 'AgentInfo' },
);

export const AgentListResponse = Type.Object({ agents: Type.Array(AgentInfo), count: Type.Integer() }, { title: 'AgentListResponse' });

export const AgentSchemaResponse = Type.Object(
  { schema: Type.String({ description: 'XSD of the payload type (of several: one root element per type)' }), contentType: Type.Literal('application/xml') },
  { title: 'AgentSchemaResponse' },
);

export const AgentParams = Type.Object({ name: Name });

export const PauseResponse = Type.Object({ success: SuccessFlag, agent: Type.String(), state: Type.Literal('paused') }, { title: 'PauseResponse' });
export const ResumeResponse = Type.Object({ success: SuccessFlag, agent: Type.String(), state: Type.Literal('idle') }, { title: 'ResumeResponse' });
