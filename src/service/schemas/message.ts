import { Type } from 'typebox';
import { AnyObject, NullableString, PageFields, PageQuery, Timestamp } from './common.js';

/** AWAITING: an ask waiting for a person (an extension of the spec's journal table). */
export const DeliveryState = Type.Enum(['PENDING', 'DISPATCHED', 'AWAITING', 'ACKED', 'FAILED']);

export const MessageRecord = Type.Object(
  {
    id: Type.String(),
    threadId: Type.String(),
    from: Type.String(),
    to: Type.String(),
    payloadType: Type.String(),
    payload: AnyObject,
    timestamp: Timestamp,
    parentId: NullableString,
    deliveryState: DeliveryState,
  },
  { title: 'MessageRecord' },
);

export const MessageListResponse = Type.Object({ messages: Type.Array(MessageRecord), ...PageFields }, { title: 'MessageListResponse' });

export const MessageQuery = Type.Object({
  agent: Type.Optional(Type.String({ maxLength: 256, description: 'Sender or receiver' })),
  threadId: Type.Optional(Type.String({ maxLength: 256 })),
  ...PageQuery,
});
