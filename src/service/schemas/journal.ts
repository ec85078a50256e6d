import { Type } from 'typebox';
import { Name, Nullable, NullableString, NullableTimestamp, PageFields, PageQuery, SuccessFlag, Timestamp } from './common.js';
import { DeliveryState, MessageRecord } from './message.js';
import { FindFields, SearchTruncated } from './find.js';

export const EarlierAttemptInfo = Type.Object(
  {
    attempt: Type.Integer({ description: '1-based' }),
    dispatchedAt: NullableTimestamp,
    endedAt: Type.String({ format: 'date-time', description: 'When it failed, or (interrupted) when it was taken back' }),
    outcome: Type.Union([Type.Literal('failed'), Type.Literal('interrupted')], {
      description: 'failed: the delivery failed and was redelivered; interrupted: its process died or lost its lease, and it was taken back',
    }),
    failureReason: NullableString,
    error: NullableString,
    requeuedAt: Type.String({ format: 'date-time', description: 'When the entry became PENDING again' }),
  },
  { title: 'EarlierAttempt' },
);

export const JournalEntryInfo = Type.Object(
  {
    ...MessageRecord.properties,
    metadata: Type.Object({}, { additionalProperties: Type.String() }),
    attempts: Type.Integer(),
    createdAt: Timestamp,
    dispatchedAt: NullableTimestamp,
    ackedAt: NullableTimestamp,
    failedAt: NullableTimestamp,
    failureReason: NullableString,
    error: NullableString,
    earlierAttempts: Type.Array(EarlierAttemptInfo, { description: 'The attempts before the latest one, oldest first; the fields above describe the latest' }),
    nextAttemptAt: Nullable(
      Type.String({ format: 'date-time', description: "A PENDING retry waiting out its listener's backoff (`retry:`): not delivered before this time; null otherwise" }),
    ),
    expiresAt: Type.Optional(NullableTimestamp),
    closedBy: Type.Optional(NullableString),
    closedNote: Type.Optional(NullableString),
  },
  { title: 'JournalEntry' },
);

export const JournalListResponse = Type.Object({ entries: Type.Array(JournalEntryInfo), ...PageFields, searchTruncated: SearchTruncated }, { title: 'JournalListResponse' });

export const JournalQuery = Type.Object({
  state: Type.Optional(DeliveryState),
  threadId: Type.Optional(Type.String({ maxLength: 256 })),
  agent: Type.Optional(Type.String({ maxLength: 256, description: 'Sender or receiver' })),
  startTime: Type.Optional(Type.String({ maxLength: 64, description: 'Entries created at or after this time (ISO 8601)' })),
  endTime: Type.Optional(Type.String({ maxLength: 64, description: 'Entries created before this time (ISO 8601)' })),
  text: FindFields.text,
  ...PageQuery,
});

export const JournalParams = Type.Object({ messageId: Name });

export const RedeliverResponse = Type.Object({ success: SuccessFlag, messageId: Type.String(), threadId: Type.String(), state: Type.Literal('PENDING') }, { title: 'RedeliverResponse' });

export { JournalStats } from './organism.js';
