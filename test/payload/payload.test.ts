import Ajv2020 from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import { Errors, OrganismError } from '../../src/errors/catalogue.js';
import { definePayload } from '../../src/payload/define.js';
import { resolveInjectPayload } from '../../src/payload/inject.js';
import { PayloadRegistry } from '../../src/payload/registry.js';

const Address = definePayload('Address', { street: 'string', zip: { type: 'string?', description: 'Postal code' } });
const Order = definePayload(
  'Order',
  { id: 'integer', total: 'number', rush: 'boolean?', tags: 'string[]', ship: 'Address', notes: 'string?', lines: 'Address[]?' },
  { description: 'An order' },
);
const registry = new PayloadRegistry([Address, Order]);
const order = registry.get('Order')!;

const valid = { id: 7, total: 12.5, rush: false, tags: ['a', 'b'], ship: { street: 'Main St 1' } };

describe('JSON validation', () => {
  it('accepts a valid payload and returns a normalized copy (nulls of optional fields dropped)', () => {
    const r = order.validate({ ...valid, notes: null });
    expect(r).toEqual({ ok: true, value: valid });
  });

  it('reports every bad field at once, with its path and what is wrong', () => {
    const r = order.validate({ id: 1.5, total: 'x', tags: ['ok', 3], ship: { zip: 5 }, extra: true });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      { path: 'extra', message: 'unknown field (Order has: id, total, rush, tags, ship, notes, lines)' },
      { path: 'id', message: 'expected integer, got number 1.5' },
      { path: 'total', message: 'expected number, got string "x"' },
      { path: 'tags[1]', message: 'expected string, got integer 3' },
      { path: 'ship.street', message: 'required field missing' },
      { path: 'ship.zip', message: 'expected string, got integer 5' },
    ]);
  });

  it('rejects non-finite numbers and non-objects', () => {
    expect(order.validate({ ...valid, total: Number.POSITIVE_INFINITY }).ok).toBe(false);
    expect(order.validate([1])).toEqual({ ok: false, errors: [{ path: '', message: 'expected an object (Order), got array' }] });
  });
});

describe('XML', () => {
  it('parses and coerces an XML payload', () => {
    const xml = '<Order><id> 7 </id><total>12.5</total><rush>1</rush><tags><item>a</item><item> b </item></tags><ship><street>Main &amp; 1st</street></ship></Order>';
    expect(order.fromXml(xml)).toEqual({ ok: true, value: { id: 7, total: 12.5, rush: true, tags: ['a', ' b '], ship: { street: 'Main & 1st' } } });
  });

  it('reports XML problems precisely', () => {
    expect(order.fromXml('<Other/>')).toEqual({ ok: false, errors: [{ path: '', message: 'wrong root element <Other>, expected <Order>' }] });
    const bad = order.fromXml('<Order><id>seven</id><total>1</total><tags/><ship><street>x</street></ship><ship><street>y</street></ship></Order>');
    expect(bad.ok || bad.errors).toEqual([
      { path: 'id', message: 'expected integer, got "seven"' },
      { path: 'ship', message: '<ship> appears 2 times; expected once' },
    ]);
    const malformed = order.fromXml('<Order><id>1</Order>');
    expect(malformed.ok || malformed.errors[0]!.message).toMatch(/^malformed XML at line 1/);
  });

  it('refuses DOCTYPE and entity declarations (no entity expansion attacks)', () => {
    const r = order.fromXml('<!DOCTYPE x [<!ENTITY a "aaaa">]><Order><id>&a;</id></Order>');
    expect(r).toEqual({ ok: false, errors: [{ path: '', message: 'DOCTYPE and entity declarations are not allowed' }] });
  });

  it('round-trips every valid payload through XML, escaping included (property)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 20 });
    const arb = fc.record(
      {
        id: fc.integer(),
        total: fc.double({ noNaN: true, noDefaultInfinity: true }),
        rush: fc.boolean(),
        tags: fc.array(text, { maxLength: 4 }),
        ship: fc.record({ street: text, zip: text }, { requiredKeys: ['street'] }),
        notes: text,
      },
      { requiredKeys: ['id', 'total', 'tags', 'ship'] },
    );
    fc.assert(
      fc.property(arb, (v) => {
        const normalized = JSON.parse(JSON.stringify(v)) as Record<string, unknown>;
        if (Object.is(v.total, -0)) normalized['total'] = 0;
        const checked = order.validate(normalized);
        if (!checked.ok) return; // only valid payloads are serialized
        const back = order.fromXml(order.toXml(checked.value));
        expect(back).toEqual({ ok: true, value: checked.value });
      }),
      { numRuns: 300 },
    );
  });
});

describe('schema documents and examples', () => {
  it('writes a well-formed XSD covering nested types, lists and optional fields', () => {
    const xsd = order.xsd();
    expect(XMLValidator.validate(xsd)).toBe(true);
    expect(xsd).toContain('<xs:element name="Order" type="OrderType"/>');
    expect(xsd).toContain('<xs:complexType name="AddressType">');
    expect(xsd).toContain('<xs:element name="rush" type="xs:boolean" minOccurs="0"/>');
    expect(xsd).toContain('<xs:element name="item" type="xs:string" minOccurs="0" maxOccurs="unbounded"/>');
    expect(xsd).toContain('<xs:documentation>An order</xs:documentation>');
    const parsed = new XMLParser({ ignoreAttributes: false }).parse(xsd) as Record<string, unknown>;
    expect(parsed['xs:schema']).toBeDefined();
  });

  it('JSON Schema and validate() agree on the example and on broken variants', () => {
    const ajv = new Ajv2020.default({ strict: false });
    const check = ajv.compile(order.jsonSchema());
    const example = order.exampleValue();
    expect(check(example)).toBe(true);
    expect(order.validate(example).ok).toBe(true);
    for (const broken of [{ ...example, id: 'x' }, { ...example, extra: 1 }, { total: 1 }]) {
      expect(check(broken)).toBe(false);
      expect(order.validate(broken).ok).toBe(false);
    }
  });

  it('every generated type has an example that validates, in JSON and in XML (property)', () => {
    const scalar = fc.constantFrom('string', 'integer', 'number', 'boolean');
    const field = fc.record({
      type: fc.oneof(
        scalar,
        scalar.map((s) => `${s}[]`),
        fc.constant('Address'),
        fc.constant('Address[]'),
      ),
      optional: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/), field), { selector: (t) => t[0], maxLength: 6 }), (fields) => {
        const def = definePayload('Gen', Object.fromEntries(fields.map(([n, f]) => [n, { type: f.type, optional: f.optional }])));
        const type = new PayloadRegistry([Address, def]).get('Gen')!;
        expect(type.validate(type.exampleValue()).ok).toBe(true);
        expect(type.fromXml(type.exampleXml())).toEqual({ ok: true, value: type.exampleValue() });
      }),
      { numRuns: 100 },
    );
  });
});

describe('registry', () => {
  it('always holds the built-in SystemError and BudgetWarning', () => {
    const r = new PayloadRegistry();
    expect(r.has('SystemError')).toBe(true);
    expect(r.get('BudgetWarning')!.validate({ percentUsed: 80, tokensUsed: 8, tokensRemaining: 2, maxTokens: 10, severity: 'warning', message: 'm' }).ok).toBe(true);
  });

  it('reports unknown references and cycles of required references', () => {
    const A = definePayload('A', { b: 'B' });
    const B = definePayload('B', { a: 'A' });
    const C = definePayload('C', { ghost: 'Ghost[]', self: 'C?' });
    const problems = new PayloadRegistry([A, B, C]).problems();
    expect(problems).toContainEqual({ type: 'C', field: 'ghost', message: 'unknown payload type Ghost' });
    expect(problems).toContainEqual({ type: 'A', field: '', message: 'required fields form a cycle that no value can satisfy: A -> B -> A' });
    expect(problems.some((p) => p.type === 'C' && p.field === '')).toBe(false); // an optional self-reference is fine
  });
});

describe('inject rule', () => {
  const Greeting = definePayload('Greeting', { name: 'string' });
  const reg = new PayloadRegistry([Greeting, Address]);
  const greeting = reg.get('Greeting')!;

  it('takes the payload type from the first key', () => {
    expect(resolveInjectPayload({ Greeting: { name: 'Dan' } }, greeting, reg)).toEqual({ payloadType: 'Greeting', payload: { name: 'Dan' } });
  });

  it('accepts the bare fields of the type the target accepts', () => {
    expect(resolveInjectPayload({ name: 'Dan' }, greeting, reg)).toEqual({ payloadType: 'Greeting', payload: { name: 'Dan' } });
  });

  it('refuses another registered type for this target', () => {
    expect(() => resolveInjectPayload({ Address: { street: 'x' } }, greeting, reg, 'greeter')).toThrow(Errors.WRONG_PAYLOAD_TYPE('greeter', 'Greeting', 'Address').detail);
  });

  it('names every bad field in one error, with the field errors attached', () => {
    let err: unknown;
    try {
      resolveInjectPayload({ name: 5, age: 3 }, greeting, reg);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OrganismError);
    const e = err as OrganismError;
    expect(e.status).toBe(422);
    expect(e.detail).toBe('Invalid Greeting payload: age: unknown field (Greeting has: name); name: expected string, got integer 5');
    expect(e.data).toHaveLength(2);
  });

  it('an empty payload is invalid when the type has required fields', () => {
    expect(() => resolveInjectPayload({}, greeting, reg)).toThrow('name: required field missing');
    expect(() => resolveInjectPayload('hi', greeting, reg)).toThrow('payload must be a JSON object');
  });
});
