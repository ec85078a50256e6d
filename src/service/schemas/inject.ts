import { Type } from 'typebox';

export const InjectRequest = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 256, description: 'Target listener' }),
    payload: Type.Object(
      {},
      {
        additionalProperties: true,
        description: 'A mapping whose first key names the payload type ({"Greeting": {...}}), or the bare fields',
      },
    ),
    threadId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Omitted: a new thread' })),
    metadata: Type.Optional(
      Type.Object(
        {
          orgId: Type.Optional(Type.String({ maxLength: 256 })),
          userId: Type.Optional(Type.String({ maxLength: 256 })),
        },
        { additionalProperties: false, description: 'Propagated along the thread; orgId drives billing' },
      ),
    ),
  },
  { title: 'InjectRequest', additionalProperties: false },
);

export const InjectResponse = Type.Object({ threadId: Type.String(), messageId: Type.String() }, { title: 'InjectResponse' });
