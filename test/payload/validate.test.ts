import { describe, expect, it } from 'vitest';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import { order, tree } from './fixtures.js';

const valid = { id: 7, total: 12.5, tags: ['a'], ship: { street: 'Main St 1' } };

function errorsOf(value: unknown, type = order) {
  const r = type.validate(value);
  return r.ok ? [] : r.errors;
}

describe('validate(): one precise message per bad field', () => {
  it.each([
    ['integer given a string', { id: 'abc' }, 'id', 'expected integer, got string "abc"'],
    ['integer given a fraction', { id: 1.5 }, 'id', 'expected integer, got number 1.5'],
    ['integer outside the safe range', { id: 2 ** 60 }, 'id', `expected integer, got integer ${2 ** 60} (outside the safe range -9007199254740991..9007199254740991)`],
    ['number given a numeric string', { total: '12' }, 'total', 'expected number, got string "12"'],
    ['number not finite', { total: Number.NaN }, 'total', 'expected number, got number NaN'],
    ['boolean given a string', { rush: 'true' }, 'rush', 'expected boolean, got string "true"'],
    ['boolean given 1', { rush: 1 }, 'rush', 'expected boolean, got integer 1'],
    ['list given a string', { tags: 'a' }, 'tags', 'expected list of string, got string "a"'],
    ['list item wrong', { tags: ['a', 'b', 3] }, 'tags[2]', 'expected string, got integer 3'],
    ['list item null', { tags: [null] }, 'tags[0]', 'expected string, got null'],
    ['nested ref not an object', { ship: 'Main St' }, 'ship', 'expected an object (Address), got string "Main St"'],
    ['nested ref given an array', { ship: [] }, 'ship', 'expected an object (Address), got array'],
    ['nested field wrong', { ship: { street: true } }, 'ship.street', 'expected string, got boolean true'],
    [
      'field in a list of refs',
      {
        items: [
          { name: 'a', qty: 1 },
          { name: 'b', qty: 'x' },
        ],
      },
      'items[1].qty',
      'expected integer, got string "x"',
    ],
    ['list of lists', { grid: [[1], [2, 'x']] }, 'grid[1][1]', 'expected integer, got string "x"'],
    ['required field null', { id: null }, 'id', 'required field missing'],
    ['unknown field', { colour: 'red' }, 'colour', 'unknown field (Order has: id, total, rush, tags, ship, items, grid, notes)'],
    ['unknown nested field', { ship: { street: 'x', city: 'y' } }, 'ship.city', 'unknown field (Address has: street, zip)'],
  ])('%s', (_label, patch, path, message) => {
    expect(errorsOf({ ...valid, ...patch })).toEqual([{ path, message }]);
  });

  it('long strings are cut in messages', () => {
    expect(errorsOf({ ...valid, id: 'x'.repeat(100) })[0]!.message).toBe(`expected integer, got string "${'x'.repeat(40)}..."`);
  });

  it('reports every bad field at once, unknown fields first, then in declaration order', () => {
    expect(errorsOf({ total: 'x', tags: ['ok', 3], ship: { zip: 5 }, extra: true, items: [{}] })).toEqual([
      { path: 'extra', message: 'unknown field (Order has: id, total, rush, tags, ship, items, grid, notes)' },
      { path: 'id', message: 'required field missing' },
      { path: 'total', message: 'expected number, got string "x"' },
      { path: 'tags[1]', message: 'expected string, got integer 3' },
      { path: 'ship.street', message: 'required field missing' },
      { path: 'ship.zip', message: 'expected string, got integer 5' },
      { path: 'items[0].name', message: 'required field missing' },
      { path: 'items[0].qty', message: 'required field missing' },
    ]);
  });

  it('the payload itself must be an object', () => {
    for (const [v, got] of [
      [null, 'null'],
      [[1], 'array'],
      ['hi', 'string "hi"'],
      [3, 'integer 3'],
      [undefined, 'undefined'],
    ] as const) {
      expect(errorsOf(v)).toEqual([{ path: '', message: `expected an object (Order), got ${got}` }]);
    }
  });

  it('returns a normalized copy: null optional fields dropped, unknown nothing, input untouched', () => {
    const input = { ...valid, notes: null, rush: null, items: [{ name: 'a', qty: 2, price: null }] };
    const r = order.validate(input);
    expect(r).toEqual({ ok: true, value: { ...valid, items: [{ name: 'a', qty: 2 }] } });
    expect(r.ok && r.value).not.toBe(input);
    expect(r.ok && r.value['tags']).not.toBe(input.tags);
    expect(input.notes).toBeNull();
  });

  it('accepts empty strings, empty lists, recursive values and integral floats', () => {
    expect(order.validate({ ...valid, id: 3.0, tags: [], notes: '' }).ok).toBe(true);
    expect(tree.validate({ label: 'root', children: [{ label: 'a', children: [] }], parent: { label: 'p', children: [] } }).ok).toBe(true);
  });

  it('looks at own properties only (a field named like an Object.prototype member)', () => {
    const T = new PayloadRegistry([definePayload('T', { toString: 'string?', valueOf: 'integer' })]).get('T')!;
    expect(T.validate({ valueOf: 1 })).toEqual({ ok: true, value: { valueOf: 1 } });
    expect(T.validate({})).toEqual({ ok: false, errors: [{ path: 'valueOf', message: 'required field missing' }] });
    expect(T.validate(JSON.parse('{"valueOf": 1, "__proto__": {"x": 1}}'))).toEqual({ ok: false, errors: [{ path: '__proto__', message: 'unknown field (T has: toString, valueOf)' }] });
  });

  it('names, description and fields are exposed', () => {
    expect(order.name).toBe('Order');
    expect(order.description).toBe('An order');
    expect(order.fields.map((f) => f.name)).toEqual(['id', 'total', 'rush', 'tags', 'ship', 'items', 'grid', 'notes']);
  });
});
