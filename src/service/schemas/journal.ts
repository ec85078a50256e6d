import { Type } from 'typebox';
import { Name, NullableString, NullableTimestamp, PageFields, PageQuery, SuccessFlag, Timestamp } from './common.js';
import { DeliveryState, MessageRecord } from './message.js';
import { FindFields, SearchTruncated } from './find.js';

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
