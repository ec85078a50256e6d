import fc from 'fast-check';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import type { PayloadTypeDef } from '../../src/payload/types.js';

export const Address = definePayload('Address', { street: 'string', zip: { type: 'string?', description: 'Postal code' } });
export const Item = definePayload('Item', { name: 'string', qty: 'integer', price: 'number?' });
export const Order = definePayload(
  'Order',
  {
    id: 'integer',
    total: 'number',
    rush: 'boolean?',
    tags: 'string[]',
    ship: 'Address',
    items: 'Item[]?',
    grid: 'integer[][]?',
    notes: 'string?',
  },
  { description: 'An order' },
);
/** Recursive through an optional field and a list (both finite). */
export const TreeNode = definePayload('TreeNode', { label: 'string', children: 'TreeNode[]', parent: 'TreeNode?' });

export const registry = new PayloadRegistry([Address, Item, Order, TreeNode]);
export const order = registry.get('Order')!;
export const tree = registry.get('TreeNode')!;

/** Strings that stress XML: specials, whitespace at the ends, CR/LF/tab, controls, astral unicode. */
export const trickyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ unit: fc.constantFrom('&', '<', '>', '"', "'", ' ', '\n', '\r', '\t', '\u0001', ']', 'é', '😀', 'a', ';', '#'), maxLength: 16 }),
  fc.constantFrom('', ' ', '  lead', 'trail  ', '\r\n', ']]>', '&amp;', '<![CDATA[x]]>', '&#x41;', '<!-- c -->'),
);

const scalar = fc.constantFrom('string', 'integer', 'number', 'boolean');

/**
 * A random, well-formed set of types T0..Tn: Ti may reference Tj with j > i through any field,
 * and any type (itself included) through optional fields or lists, so no required cycle exists.
 */
export const randomRegistry: fc.Arbitrary<PayloadTypeDef[]> = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) => {
      const later = Array.from({ length: n - i - 1 }, (_, k) => `T${i + k + 1}`);
      const any = Array.from({ length: n }, (_, k) => `T${k}`);
      const base = fc.oneof(scalar, ...(later.length > 0 ? [fc.constantFrom(...later)] : []));
      const field = fc.oneof(
        fc.record({ type: base, optional: fc.boolean() }),
        fc.record({ type: fc.oneof(base, fc.constantFrom(...any)).map((t) => `${t}[]`), optional: fc.boolean() }),
        fc.record({ type: fc.constantFrom(...any), optional: fc.constant(true) }),
        fc.record({ type: scalar.map((t) => `${t}[][]`), optional: fc.boolean() }),
      );
      return fc
        .uniqueArray(fc.tuple(fc.stringMatching(/^[a-z][a-zA-Z0-9_]{0,8}$/), field, fc.option(fc.string({ maxLength: 20 }), { nil: undefined })), {
          selector: (t) => t[0],
          maxLength: 6,
        })
        .map((fields) =>
          definePayload(
            `T${i}`,
            Object.fromEntries(fields.map(([name, f, description]) => [name, { type: f.type, optional: f.optional, ...(description !== undefined ? { description } : {}) }])),
            { description: `Type ${i} <&>` },
          ),
        );
    }),
  ),
);

type Resolve = (name: string) => PayloadTypeDef | undefined;

/** Valid values of a type (depth-bounded: deeper optional refs are left out, deeper lists empty). */
export function valueArb(def: PayloadTypeDef, resolve: Resolve, depth = 3): fc.Arbitrary<Record<string, unknown>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  const required: string[] = [];
  for (const f of def.fields) {
    if (f.type.kind === 'ref' && f.optional && depth <= 0) continue;
    fields[f.name] = fieldArb(f.type, resolve, depth);
    if (!f.optional) required.push(f.name);
  }
  return fc.record(fields, { requiredKeys: required });
}

function fieldArb(type: PayloadTypeDef['fields'][number]['type'], resolve: Resolve, depth: number): fc.Arbitrary<unknown> {
  switch (type.kind) {
    case 'string':
      return trickyString;
    case 'integer':
      return fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.constant(0));
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (n === 0 ? 0 : n));
    case 'boolean':
      return fc.boolean();
    case 'list':
      return depth <= 0 ? fc.constant([]) : fc.array(fieldArb(type.of, resolve, depth - 1), { maxLength: 3 });
    case 'ref':
      return valueArb(resolve(type.name)!, resolve, depth - 1);
  }
}
