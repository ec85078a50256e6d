import Ajv2020 from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { BUDGET_WARNING_DEF, SYSTEM_ERROR_DEF } from '../../src/payload/builtin.js';
import { definePayload } from '../../src/payload/define.js';
import type { PayloadType } from '../../src/payload/payload-type.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import type { FieldType, PayloadTypeDef } from '../../src/payload/types.js';
import { order, randomRegistry, registry, tree } from './fixtures.js';

// One Ajv for the file: a new instance compiles the draft 2020-12 meta-schema on its first
// compile (~100 ms, ~30x a schema's own compile), 400+ times over in the property tests below.
// The schemas carry no $id, so each compiles on its own, in strict mode, as with a fresh instance.
const shared = new Ajv2020.default({ strict: true, allowUnionTypes: true });
const ajv = () => shared;

describe('xsd()', () => {
  const xsd = order.xsd();

  it('is a well-formed XSD 1.0 document', () => {
    expect(XMLValidator.validate(xsd)).toBe(true);
    expect(xsd.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"')).toBe(true);
    const doc = new XMLParser({ ignoreAttributes: false }).parse(xsd) as Record<string, Record<string, unknown>>;
    const types = doc['xs:schema']!['xs:complexType'] as { '@_name': string }[];
    expect(types.map((t) => t['@_name'])).toEqual(['OrderType', 'AddressType', 'ItemType']);
  });

  it('declares the root element, each field with its XSD type, optional fields with minOccurs="0"', () => {
    for (const line of [
      '<xs:element name="Order" type="OrderType"/>',
      '<xs:element name="id" type="xs:integer"/>',
      '<xs:element name="total" type="xs:double"/>',
      '<xs:element name="rush" type="xs:boolean" minOccurs="0"/>',
      '<xs:element name="ship" type="AddressType"/>',
      '<xs:element name="notes" type="xs:string" minOccurs="0"/>',
      '<xs:element name="street" type="xs:string"/>',
      '<xs:element name="zip" type="xs:string" minOccurs="0"><xs:annotation><xs:documentation>Postal code</xs:documentation></xs:annotation></xs:element>',
      '<xs:annotation><xs:documentation>An order</xs:documentation></xs:annotation>',
    ]) {
      expect(xsd).toContain(line);
    }
  });

  it('documents the list encoding: one <item> per entry, lists of lists nested', () => {
    expect(xsd).toContain(
      '<xs:element name="tags"><xs:annotation><xs:documentation>A list: one &lt;item&gt; element per entry.</xs:documentation></xs:annotation><xs:complexType><xs:sequence><xs:element name="item" type="xs:string" minOccurs="0" maxOccurs="unbounded"/></xs:sequence></xs:complexType></xs:element>',
    );
    expect(xsd).toContain('<xs:element name="items" minOccurs="0">');
    expect(xsd).toContain('<xs:element name="item" type="ItemType" minOccurs="0" maxOccurs="unbounded"/>');
    expect(xsd).toContain(
      '<xs:element name="item" minOccurs="0" maxOccurs="unbounded"><xs:complexType><xs:sequence><xs:element name="item" type="xs:integer" minOccurs="0" maxOccurs="unbounded"/>',
    );
  });

  it('handles recursive types with one complexType', () => {
    const t = tree.xsd();
    expect(t.match(/<xs:complexType name="TreeNodeType">/g)).toHaveLength(1);
    expect(t).toContain('<xs:element name="parent" type="TreeNodeType" minOccurs="0"/>');
  });

  it('is well-formed for random types, with descriptions escaped (property)', () => {
    fc.assert(
      fc.property(randomRegistry, (defs) => {
        const text = new PayloadRegistry(defs).get('T0')!.xsd();
        expect(XMLValidator.validate(text)).toBe(true);
        expect(text).toContain('<xs:documentation>Type 0 &lt;&amp;&gt;</xs:documentation>');
      }),
      { numRuns: 100 },
    );
  });
});

describe('exampleValue() and exampleXml()', () => {
  it('are plausible, using descriptions and field names', () => {
    const r = new PayloadRegistry([
      definePayload('Person', {
        name: 'string',
        email: 'string',
        age: 'integer',
        createdAt: 'string',
        mood: { type: 'string', description: 'happy|sad' },
        homepage: 'string?',
      }),
    ]);
    expect(r.get('Person')!.exampleValue()).toEqual({
      name: 'Ada',
      email: 'ada@example.com',
      age: 42,
      createdAt: '2024-05-01T12:00:00Z',
      mood: 'happy',
      homepage: 'https://example.com',
    });
    expect(r.get('BudgetWarning')!.exampleValue()['severity']).toBe('warning');
    expect(r.get('SystemError')!.exampleValue()['code']).toBe('peer_denied');
  });

  it('validate, as JSON, as XML and against the JSON Schema, for the built-ins and fixtures', () => {
    const all = new PayloadRegistry([...registry.defs(), SYSTEM_ERROR_DEF, BUDGET_WARNING_DEF]);
    for (const name of all.names()) expectExampleValid(all.get(name)!);
  });

  it('validate for random type definitions (property)', () => {
    fc.assert(
      fc.property(randomRegistry, (defs) => {
        const r = new PayloadRegistry(defs);
        for (const d of defs) expectExampleValid(r.get(d.name)!);
      }),
      { numRuns: 100 },
    );
  });

  it('are finite even when required references form a cycle', () => {
    const r = new PayloadRegistry([definePayload('A', { b: 'B' }), definePayload('B', { a: 'A', n: 'integer' })]);
    expect(r.get('A')!.exampleValue()).toEqual({ b: { a: {}, n: 1 } });
  });

  it('return a fresh copy each time', () => {
    const a = order.exampleValue();
    a['id'] = 'changed';
    expect(order.exampleValue()['id']).toBe(1);
  });
});

describe('jsonSchema()', () => {
  it('is draft 2020-12 with $defs, required, additionalProperties false and descriptions', () => {
    const s = order.jsonSchema() as { $defs: Record<string, Record<string, unknown>>; [k: string]: unknown };
    expect(s['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(s['title']).toBe('Order');
    expect(s['description']).toBe('An order');
    expect(s['required']).toEqual(['id', 'total', 'tags', 'ship']);
    expect(s['additionalProperties']).toBe(false);
    expect(s['properties']).toMatchObject({
      id: { type: 'integer' },
      rush: { type: ['boolean', 'null'] },
      ship: { $ref: '#/$defs/Address' },
      items: { type: ['array', 'null'], items: { $ref: '#/$defs/Item' } },
    });
    expect(Object.keys(s.$defs)).toEqual(['Address', 'Item']);
    expect(s.$defs['Address']).toMatchObject({ title: 'Address', additionalProperties: false, properties: { zip: { description: 'Postal code' } } });
  });

  it('compiles in strict mode for recursive types (self references point at the root)', () => {
    const s = tree.jsonSchema();
    expect(s['properties']).toMatchObject({ children: { items: { $ref: '#' } }, parent: { anyOf: [{ $ref: '#' }, { type: 'null' }] } });
    const check = ajv().compile(s);
    expect(check(tree.exampleValue())).toBe(true);
    expect(check({ label: 'x', children: [{ label: 1, children: [] }] })).toBe(false);
  });

  it('returns a fresh copy each time', () => {
    const s = order.jsonSchema();
    s['title'] = 'changed';
    expect(order.jsonSchema()['title']).toBe('Order');
  });

  it('ajv and validate() give the same verdict on nearly valid values (property)', () => {
    fc.assert(
      fc.property(
        randomRegistry.chain((defs) =>
          fc.tuple(
            fc.constant(defs),
            nearlyValid(defs[0]!, (n) => defs.find((d) => d.name === n)!, 3),
          ),
        ),
        ([defs, value]) => {
          const type = new PayloadRegistry(defs).get('T0')!;
          const check = ajv().compile(type.jsonSchema());
          expect(check(value)).toBe(type.validate(value).ok);
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000); // 300 schema compilations (and validations of random values)
});

function expectExampleValid(type: PayloadType): void {
  const example = type.exampleValue();
  expect(type.validate(example), type.name).toEqual({ ok: true, value: example });
  expect(type.fromXml(type.exampleXml()), type.name).toEqual({ ok: true, value: example });
  expect(ajv().compile(type.jsonSchema())(example), type.name).toBe(true);
}

const junk = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.integer(),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.stringMatching(/^[a-z]{1,3}$/), fc.integer(), { maxKeys: 2 }),
);

/** A key no random type has. Built once: a regex arbitrary is costly to build, and nearlyValid runs per object per run. */
const extraKey = fc.stringMatching(/^zz[a-z]{0,3}$/);

/** Mostly valid values with a few wrong, missing or extra parts. */
function nearlyValid(def: PayloadTypeDef, resolve: (n: string) => PayloadTypeDef, depth: number): fc.Arbitrary<unknown> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of def.fields) {
    if (f.type.kind === 'ref' && f.optional && depth <= 0) continue;
    fields[f.name] = fc.oneof({ weight: 6, arbitrary: nearlyValidField(f.type, resolve, depth) }, { weight: 1, arbitrary: junk });
  }
  const obj = fc.record(fields, { requiredKeys: def.fields.filter((f) => !f.optional && fields[f.name]).map((f) => f.name) });
  return fc.oneof(
    { weight: 8, arbitrary: obj },
    { weight: 1, arbitrary: fc.record(fields, { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.tuple(obj, extraKey).map(([o, k]) => ({ ...o, [k]: 1 })) },
    { weight: 1, arbitrary: junk },
  );
}

function nearlyValidField(type: FieldType, resolve: (n: string) => PayloadTypeDef, depth: number): fc.Arbitrary<unknown> {
  switch (type.kind) {
    case 'string':
      return fc.string({ maxLength: 4 });
    case 'integer':
      return fc.integer();
    case 'number':
      return fc.double({ min: -1e6, max: 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'list':
      return depth <= 0 ? fc.constant([]) : fc.array(fc.oneof({ weight: 6, arbitrary: nearlyValidField(type.of, resolve, depth - 1) }, { weight: 1, arbitrary: junk }), { maxLength: 3 });
    case 'ref':
      return nearlyValid(resolve(type.name), resolve, depth - 1);
  }
}
