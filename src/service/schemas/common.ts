import { Type, type TSchema } from 'typebox';

/** An ISO 8601 UTC timestamp (`2025-01-31T12:00:00.000Z`). */
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const NullableString = Type.Union([Type.String(), Type.Null()]);

/** Any JSON object (payloads, sanitized config). */
export const AnyObject = Type.Object({}, { additionalProperties: true });

/** Page size 1..100 (default 50) and offset >= 0: the spec's limits for threads and messages. */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size (1..100)' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Items to skip' })),
};

export const PageFields = {
  count: Type.Integer({ description: 'Items in this page' }),
  total: Type.Integer({ description: 'Matches before paging' }),
  offset: Type.Integer(),
  limit: Type.Integer(),
};

/** Path parameters are bounded so nothing unreasonable reaches the stores. */
export const Name = Type.String({ minLength: 1, maxLength: 256 });

export function Nullable<T extends TSchema>(schema: T) {
  return Type.Union([schema, Type.Null()]);
}

export const SuccessFlag = Type.Literal(true);
