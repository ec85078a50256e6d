import { describe, expect, it } from 'vitest';
import { BUDGET_WARNING_DEF, BUILTIN_PAYLOADS, SYSTEM_ERROR_DEF } from '../../src/payload/builtin.js';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';

describe('PayloadRegistry', () => {
  it('always holds the built-ins, with the fields the runtime sends', () => {
    const r = new PayloadRegistry();
    expect(r.names()).toEqual(['SystemError', 'BudgetWarning']);
    expect(r.defs()).toEqual([...BUILTIN_PAYLOADS]);
    expect(SYSTEM_ERROR_DEF.fields.map((f) => [f.name, f.type.kind, f.optional])).toEqual([
      ['error', 'string', false],
      ['code', 'string', false],
      ['reason', 'string', true],
      ['messageId', 'string', true],
      ['to', 'string', true],
      // A failure routed by a listener's `on_error`: how many tries the delivery had.
      ['attempts', 'integer', true],
    ]);
    expect(BUDGET_WARNING_DEF.fields.map((f) => [f.name, f.type.kind, f.optional])).toEqual([
      ['percentUsed', 'number', false],
      ['tokensUsed', 'integer', false],
      ['tokensRemaining', 'integer', false],
      ['maxTokens', 'integer', false],
      ['severity', 'string', false],
      ['message', 'string', false],
    ]);
    expect(r.get('SystemError')!.validate({ error: 'e', code: 'timeout' }).ok).toBe(true);
    expect(r.get('BudgetWarning')!.validate({ percentUsed: 75.2, tokensUsed: 8, tokensRemaining: 2, maxTokens: 10, severity: 'warning', message: 'm' }).ok).toBe(true);
  });

  it('get/has/names/defs; unknown names give undefined', () => {
    const G = definePayload('Greeting', { name: 'string' });
    const r = new PayloadRegistry([G]);
    expect(r.has('Greeting')).toBe(true);
    expect(r.has('Nope')).toBe(false);
    expect(r.get('Nope')).toBeUndefined();
    expect(r.names()).toEqual(['SystemError', 'BudgetWarning', 'Greeting']);
    expect(r.defs()).toContain(G);
  });

  it('compiles each type once, and again after add() (references may resolve differently)', () => {
    const r = new PayloadRegistry([definePayload('Box', { inner: 'Inner?' })]);
    const before = r.get('Box')!;
    expect(r.get('Box')).toBe(before);
    expect(before.xsd()).not.toContain('<xs:complexType name="InnerType">');
    r.add(definePayload('Inner', { n: 'integer' }));
    const after = r.get('Box')!;
    expect(after).not.toBe(before);
    expect(after.xsd()).toContain('<xs:complexType name="InnerType">');
    expect(after.validate({ inner: { n: 'x' } })).toEqual({ ok: false, errors: [{ path: 'inner.n', message: 'expected integer, got string "x"' }] });
  });

  it('a reference to an unknown type is a problem, and a validation error rather than a crash', () => {
    const r = new PayloadRegistry([definePayload('C', { ghost: 'Ghost[]', other: 'Other?' })]);
    expect(r.problems()).toEqual([
      { type: 'C', field: 'ghost', message: 'unknown payload type Ghost' },
      { type: 'C', field: 'other', message: 'unknown payload type Other' },
    ]);
    expect(r.get('C')!.validate({ ghost: [{}] })).toEqual({ ok: false, errors: [{ path: 'ghost[0]', message: 'unknown payload type Ghost' }] });
  });

  it('a cycle of required references is reported once; optional or list links break a cycle', () => {
    const r = new PayloadRegistry([
      definePayload('A', { b: 'B' }),
      definePayload('B', { c: 'C' }),
      definePayload('C', { a: 'A', n: 'integer' }),
      definePayload('Self', { self: 'Self' }),
      definePayload('Opt', { next: 'Opt?' }),
      definePayload('Tree', { kids: 'Tree[]' }),
      definePayload('P', { q: 'Q' }),
      definePayload('Q', { p: 'P?' }),
    ]);
    expect(r.problems()).toEqual([
      { type: 'A', field: '', message: 'required fields form a cycle that no value can satisfy: A -> B -> C -> A' },
      { type: 'Self', field: '', message: 'required fields form a cycle that no value can satisfy: Self -> Self' },
    ]);
  });

  it('names that cannot be XML element names, reserved and duplicate fields are problems', () => {
    const bad = {
      name: 'Bad Name',
      fields: [
        { name: 'constructor', type: { kind: 'string' }, optional: false },
        { name: '1st', type: { kind: 'string' }, optional: false },
        { name: 'ok', type: { kind: 'string' }, optional: false },
        { name: 'ok', type: { kind: 'integer' }, optional: true },
      ],
    } as const;
    expect(new PayloadRegistry([bad]).problems()).toEqual([
      { type: 'Bad Name', field: '', message: 'type name "Bad Name" is not a valid XML element name' },
      { type: 'Bad Name', field: 'constructor', message: 'field name constructor is reserved' },
      { type: 'Bad Name', field: '1st', message: 'field name "1st" is not a valid XML element name' },
      { type: 'Bad Name', field: 'ok', message: 'field ok is declared twice' },
    ]);
  });

  it('a sound registry has no problems', () => {
    expect(new PayloadRegistry([definePayload('Fine', { a: 'string', b: 'Fine[]', c: 'Fine?' })]).problems()).toEqual([]);
  });
});
