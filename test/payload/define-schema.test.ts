import { Type } from 'typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { definePayload, isPayloadTypeDef, type StaticPayload } from '../../src/payload/define.js';
import { PayloadType } from '../../src/payload/payload-type.js';

describe('definePayload: the static type of a code-declared payload', () => {
  it('field specs give the data type: scalars, lists, optional by ? or optional: true', () => {
    const Greeting = definePayload('Greeting', { name: 'string', count: 'integer', ratio: 'number?', tags: 'string[]?', ok: { type: 'boolean', optional: true }, grid: 'list<integer[]>' });
    expectTypeOf<StaticPayload<typeof Greeting>>().toEqualTypeOf<{ name: string; count: number; grid: number[][]; ratio?: number; tags?: string[]; ok?: boolean }>();
    expect(Greeting.fields.map((f) => [f.name, f.optional])).toEqual([
      ['name', false],
      ['count', false],
      ['ratio', true],
      ['tags', true],
      ['ok', true],
      ['grid', false],
    ]);
  });

  it('a TypeBox Type.Object is the single source of the type, the fields and so the JSON Schema and validation', () => {
    const Order = definePayload(
      'Order',
      Type.Object(
        { id: Type.Integer({ description: 'The order number' }), lines: Type.Array(Type.String()), note: Type.Optional(Type.String()), ship_to: Type.Ref('Address') },
        { description: 'An order' },
      ),
    );
    expectTypeOf<StaticPayload<typeof Order>['id']>().toEqualTypeOf<number>();
    expectTypeOf<StaticPayload<typeof Order>['lines']>().toEqualTypeOf<string[]>();
    expect(isPayloadTypeDef(Order)).toBe(true);
    expect(Order.description).toBe('An order');
    expect(Order.fields).toEqual([
      { name: 'id', type: { kind: 'integer' }, optional: false, description: 'The order number' },
      { name: 'lines', type: { kind: 'list', of: { kind: 'string' } }, optional: false },
      { name: 'note', type: { kind: 'string' }, optional: true },
      { name: 'ship_to', type: { kind: 'ref', name: 'Address' }, optional: false },
    ]);
    const Address = definePayload('Address', Type.Object({ street: Type.String() }));
    const type = new PayloadType(Order, (name) => (name === 'Address' ? Address : undefined));
    expect(type.validate({ id: 1, lines: [], ship_to: { street: 'x' } }).ok).toBe(true);
    const bad = type.validate({ id: 'one', lines: [], ship_to: { street: 'x' } });
    expect(bad.ok).toBe(false);
  });

  it('refuses schema kinds payload fields do not have, saying what to write instead', () => {
    expect(() => definePayload('E', Type.Object({ level: Type.Union([Type.Literal('low'), Type.Literal('high')]) }))).toThrow(
      'definePayload(E): field level: enums and constants are not payload field kinds',
    );
    expect(() => definePayload('U', Type.Object({ v: Type.Union([Type.String(), Type.Integer()]) }))).toThrow(
      'definePayload(U): field v: only Type.String, Type.Integer, Type.Number, Type.Boolean, Type.Array and Type.Ref are payload field kinds',
    );
    expect(() => definePayload('E', Type.Object({ level: Type.Enum(['low', 'high']) }))).toThrow('definePayload(E): field level: enums and constants are not payload field kinds');
    expect(() => definePayload('N', Type.Object({ inner: Type.Object({ a: Type.String() }) }))).toThrow(
      "definePayload(N): field inner: a nested object must be a payload type of its own: definePayload('Name', ...) and Type.Ref('Name')",
    );
  });
});
