import { Type } from 'typebox';
import { Name } from './common.js';

/** The most a bulk action does in one request (ids given, or matches of a filter). */
export const BULK_MAX = 1000;
/** The longest text a search takes. */
export const SEARCH_TEXT_MAX = 200;

const TimeParam = (what: string) => Type.Optional(Type.String({ maxLength: 64, description: `${what} (ISO 8601, e.g. 2025-01-31T00:00:00Z)` }));
const SearchText = Type.Optional(
  Type.String({
    maxLength: SEARCH_TEXT_MAX,
    description: 'Text contained in a payload (its field names and values) or an error, case-insensitive; read among the newest 100,000 journal entries',
  }),
);

/** The time range and text search the thread and journal lists take beside their own filters. */
export const FindFields = {
  startTime: TimeParam('Inclusive start'),
  endTime: TimeParam('Exclusive end'),
  text: SearchText,
};

export const SearchTruncated = Type.Optional(Type.Boolean({ description: 'With `text`: true when the journal holds entries older than the newest 100,000, which the search did not read' }));

const Skipped = Type.Object({ id: Type.String(), code: Type.String({ description: 'The error code the single action would answer' }), detail: Type.String() }, { title: 'BulkSkipped' });

const BulkCounts = {
  matched: Type.Integer({ description: 'Ids given (without repeats), or every match of the filter' }),
  attempted: Type.Integer({ description: `Acted on in this request: at most ${BULK_MAX} (send it again for the rest)` }),
  skipped: Type.Array(Skipped, { description: 'What was not done, each with the reason' }),
  searchTruncated: SearchTruncated,
};

export const ThreadFilter = Type.Object(
  {
    agent: Type.Optional(Type.String({ maxLength: 256, description: 'Participant' })),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('waiting'), Type.Literal('held')], {
        description: 'Only this unfinished status (absent: active and waiting, held ones included; held: the held threads)',
      }),
    ),
    ...FindFields,
  },
  { additionalProperties: false, description: 'The threads list filter (only unfinished threads, active, waiting or held, can be killed)' },
);

export const BulkKillRequest = Type.Object(
  {
    threadIds: Type.Optional(Type.Array(Name, { minItems: 1, maxItems: BULK_MAX, description: 'The threads to kill' })),
    filter: Type.Optional(ThreadFilter),
  },
  { title: 'BulkKillRequest', additionalProperties: false, description: 'Either threadIds or filter' },
);

export const BulkKillResponse = Type.Object({ ...BulkCounts, killed: Type.Integer() }, { title: 'BulkKillResponse' });

export const JournalFilter = Type.Object(
  {
    threadId: Type.Optional(Type.String({ maxLength: 256 })),
    agent: Type.Optional(Type.String({ maxLength: 256, description: 'Sender or receiver' })),
    ...FindFields,
  },
  { additionalProperties: false, description: 'The journal list filter (state is always FAILED: only FAILED entries can be redelivered)' },
);

export const BulkRedeliverRequest = Type.Object(
  {
    messageIds: Type.Optional(Type.Array(Name, { minItems: 1, maxItems: BULK_MAX, description: 'The FAILED entries to redeliver' })),
    filter: Type.Optional(JournalFilter),
  },
  { title: 'BulkRedeliverRequest', additionalProperties: false, description: 'Either messageIds or filter' },
);

export const BulkRedeliverResponse = Type.Object({ ...BulkCounts, redelivered: Type.Integer() }, { title: 'BulkRedeliverResponse' });
