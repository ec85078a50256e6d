import { Type } from 'typebox';
import { ThreadUsage } from './usage.js';
import { Name, NullableString, PageFields, PageQuery, SuccessFlag, Timestamp } from './common.js';
import { MessageRecord } from './message.js';
import { FindFields, SearchTruncated } from './find.js';

/** waiting: an ask waits for a person (an extension of the spec). */
export const ThreadStatus = Type.Enum(['active', 'waiting', 'completed', 'error', 'killed']);

export const ThreadInfo = Type.Object(
  {
    id: Type.String(),
    status: ThreadStatus,
    participants: Type.Array(Type.String()),
    messageCount: Type.Integer(),
    createdAt: Timestamp,
    lastActivity: Timestamp,
    error: NullableString,
  },
  { title: 'ThreadInfo' },
);

export const ThreadDetail = Type.Object(
  {
    ...ThreadInfo.properties,
    messages: Type.Array(MessageRecord, { description: 'Oldest first; the latest 100' }),
    usage: ThreadUsage,
  },
  { title: 'ThreadDetail' },
);

export const ThreadListResponse = Type.Object({ threads: Type.Array(ThreadInfo), ...PageFields, searchTruncated: SearchTruncated }, { title: 'ThreadListResponse' });

/** `status` is a plain string here: the spec answers a bad value with 400 and its own text. */
export const ThreadQuery = Type.Object({
  status: Type.Optional(Type.String({ description: 'active, waiting, completed, error or killed' })),
  agent: Type.Optional(Type.String({ maxLength: 256, description: 'Participant' })),
  startTime: Type.Optional(Type.String({ maxLength: 64, description: 'Threads active at or after this time: last activity not earlier (ISO 8601)' })),
  endTime: Type.Optional(Type.String({ maxLength: 64, description: 'Threads created before this time (ISO 8601)' })),
  text: FindFields.text,
  ...PageQuery,
});

export const ThreadParams = Type.Object({ threadId: Name });
export const ThreadPageQuery = Type.Object({ ...PageQuery });

export const KillResponse = Type.Object({ success: SuccessFlag, threadId: Type.String() }, { title: 'KillResponse' });
