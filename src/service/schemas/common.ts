import { Type, type Static, type TSchema } from 'typebox';

/**
 * `schema` or null, written as a JSON Schema type list (`type: ['string', 'null']`) rather than
 * a union: for a union the response serializer validates each value against every branch to
 * pick one (with date-time format checks that was a tenth of GET /agents' CPU); with a type
 * list it tells them apart by JavaScript type.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const { type } = schema as { type?: unknown };
  if (typeof type !== 'string') throw new Error('Nullable() needs a schema with a single type');
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] });
}

/** An ISO 8601 UTC timestamp (`2025-01-31T12:00:00.000Z`). */
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC' });
export const NullableTimestamp = Nullable(Timestamp);
export const NullableString = Nullable(Type.String());

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

export const SuccessFlag = Type.Literal(true);
