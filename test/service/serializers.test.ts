import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { sharedSerializers } from '../../src/service/serializers.js';

const route = (schema: unknown, httpStatus = '200') => ({ schema, method: 'GET', url: '/x', httpStatus }) as Parameters<ReturnType<typeof sharedSerializers>>[0];

describe('sharedSerializers', () => {
  it('builds one serializer per response schema object, used by every route and status that has it', () => {
    const compile = sharedSerializers({}, {});
    const Body = Type.Object({ detail: Type.String(), n: Type.Optional(Type.Integer()) });
    const a = compile(route(Body, '4xx'));
    expect(compile({ ...route(Body, '5xx'), url: '/y', method: 'POST' })).toBe(a);
    // An equal schema that is another object is built on its own (nothing is compared by content).
    const Other = Type.Object({ detail: Type.String(), n: Type.Optional(Type.Integer()) });
    expect(compile(route(Other))).not.toBe(a);
    // It serializes as fast-json-stringify does: known fields only, in schema order.
    expect(a({ n: 2, detail: 'x', secret: 'dropped' })).toBe('{"detail":"x","n":2}');
  });

  it('keeps the serializers of each schema controller apart (another context may have other shared schemas)', () => {
    const Body = Type.Object({ detail: Type.String() });
    expect(sharedSerializers({}, {})(route(Body))).not.toBe(sharedSerializers({}, {})(route(Body)));
  });
});
