import { Type } from 'typebox';
import { ThreadUsage } from './usage.js';
import { Name, NullableString, PageFields, PageQuery, SuccessFlag, Timestamp } from './common.js';
import { MessageRecord } from './message.js';
import { FindFields, SearchTruncated } from './find.js';

/** waiting: an ask waits for a person (an extension of the spec). */
export const ThreadStatus = Type.Enum(['active', 'waiting', 'completed', 'error', 'killed']);

export const ForkedFrom = Type.Object(
  { threadId: Type.String(), messageId: Type.String({ description: 'The fork ran on from this message of the source thread' }) },
  { title: 'ForkedFrom' },
);

export const ThreadInfo = Type.Object(
  {
    id: Type.String(),
    status: ThreadStatus,
    participants: Type.Array(Type.String()),
    messageCount: Type.Integer(),
    createdAt: Timestamp,
    lastActivity: Timestamp,
    error: NullableString,
    forkedFrom: Type.Union([ForkedFrom, Type.Null()], { description: 'The thread and message this thread was forked from (time travel); null: not a fork' }),
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

export const ForkRequest = Type.Object(
  {
    atMessageId: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The message the fork runs on from; the messages before it are its history (default: the first message)' })),
    configPath: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Not supported yet: a fork runs under the current configuration' })),
    dryRun: Type.Optional(Type.Boolean({ description: 'Check and answer what the fork would be, creating nothing' })),
  },
  { additionalProperties: false, title: 'ForkRequest' },
);

export const ForkResponse = Type.Object(
  {
    threadId: Type.Union([Type.String(), Type.Null()], { description: 'The new thread; null for a dry run' }),
    forkedFrom: ForkedFrom,
    replay: Type.Enum(['record', 'live'], {
      description: 'record: LLM calls are answered from the source thread\'s record while their requests match; live: the source\'s answers were not recorded (llm.record metadata or off), every call goes to a provider',
    }),
    liveReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the fork runs live (replay live)' }),
    history: Type.Integer({ description: 'Messages of the source copied as the fork\'s history (those before atMessageId)' }),
    dryRun: Type.Boolean(),
  },
  { title: 'ForkResponse' },
);
