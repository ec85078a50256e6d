import { Type } from 'typebox';
import { AnyObject, Name, NullableString, NullableTimestamp, PageFields, PageQuery, Timestamp } from './common.js';
import { MessageRecord } from './message.js';

/** An open item of the inbox: an ask waiting for a person (issue 25). */
export const InboxItem = Type.Object(
  {
    id: Type.String({ description: 'The item id (the ask message id)' }),
    kind: Type.Enum(['ask', 'approval']),
    threadId: Type.String(),
    messageId: Type.String(),
    listener: Type.String({ description: 'The builtin:human listener asked' }),
    from: Type.String({ description: 'Who asked: an answer replies to it unless `to` names a peer' }),
    payloadType: Type.String(),
    payload: AnyObject,
    proposedCalls: Type.Optional(
      Type.Array(Type.Object({ id: Type.String(), name: Type.String({ description: 'The tool' }), arguments: Type.Unknown({ description: "The model's arguments" }) }), {
        description: 'Approvals: the calls the model proposed (approve runs them; `calls` edits their arguments)',
      }),
    ),
    answerSchema: Type.Object({}, { additionalProperties: true, description: 'The JSON Schema an answer to the asker must meet' }),
    peerSchemas: Type.Record(Type.String(), Type.Object({}, { additionalProperties: true }), {
      description: "The JSON Schema an answer sent on to each of the listener's peers (`to`) must meet, by peer name",
    }),
    createdAt: Timestamp,
    expiresAt: NullableTimestamp,
  },
  { title: 'InboxItem' },
);

export const InboxQuery = Type.Object({
  listener: Type.Optional(Type.String({ maxLength: 256, description: 'The human listener' })),
  threadId: Type.Optional(Type.String({ maxLength: 256 })),
  kind: Type.Optional(Type.Enum(['ask', 'approval'])),
  ...PageQuery,
});

export const InboxListResponse = Type.Object({ items: Type.Array(InboxItem), ...PageFields }, { title: 'InboxListResponse' });

export const InboxParams = Type.Object({ id: Name });

export const AnswerRequest = Type.Object(
  {
    payload: Type.Unknown({ description: 'As in inject: {"Type": {...fields}}, or the bare fields when the target accepts one type' }),
    to: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "One of the listener's peers (default: the asker)" })),
    note: Type.Optional(Type.String({ maxLength: 10_000 })),
  },
  { additionalProperties: false, title: 'AnswerRequest' },
);

export const AnswerResponse = Type.Object({ message: MessageRecord }, { title: 'AnswerResponse' });

export const ApproveRequest = Type.Object(
  {
    calls: Type.Optional(
      Type.Array(
        Type.Object(
          { id: Type.String({ minLength: 1, maxLength: 256, description: 'A proposed call id' }), arguments: Type.Unknown({ description: "The call's arguments as they run (an edit)" }) },
          { additionalProperties: false },
        ),
        { maxItems: 1000 },
      ),
    ),
    note: Type.Optional(Type.String({ maxLength: 10_000 })),
  },
  { additionalProperties: false, title: 'ApproveRequest' },
);

export const RejectRequest = Type.Object({ note: Type.String({ minLength: 1, maxLength: 10_000 }) }, { additionalProperties: false, title: 'RejectRequest' });

/** How an item closed: `inbox_closed` frames and the reject response. */
export const InboxClosed = Type.Object(
  {
    id: Type.String(),
    kind: Type.Enum(['ask', 'approval']),
    threadId: Type.String(),
    listener: Type.String(),
    outcome: Type.Enum(['answered', 'approved', 'edited', 'rejected', 'expired', 'killed']),
    by: Type.String({ description: 'A token name, `timeout` or `kill`' }),
    at: Timestamp,
    note: NullableString,
    sentId: NullableString,
  },
  { title: 'InboxClosed' },
);

export const InboxCounts = Type.Object({ open: Type.Integer(), asks: Type.Integer(), approvals: Type.Integer() }, { title: 'InboxCounts' });
