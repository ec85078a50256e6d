import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type SerializerFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']>;

/**
 * Fastify's response serializers (fast-json-stringify, as Fastify builds them), one per response
 * schema object rather than one per route and status: every route answers its errors with the
 * same ErrorBody for 4xx and 5xx, and building those ~150 identical serializers was a sixth of
 * the time from spawn to serving. Per schema controller (its shared schemas), as Fastify's own.
 */
export const sharedSerializers: SerializerFactory = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  const built = new WeakMap<object, (data: unknown) => string>();
  return (route) => {
    const schema = route.schema as object;
    let serialize = built.get(schema);
    if (!serialize) {
      serialize = build(route) as (data: unknown) => string;
      built.set(schema, serialize);
    }
    return serialize;
  };
};
