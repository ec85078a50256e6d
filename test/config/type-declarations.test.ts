import { describe, expect, it } from 'vitest';
import { generateTypeDeclarations, interfaceNames, propertyKey } from '../../src/config/type-declarations.js';
import { definePayload } from '../../src/payload/define.js';
import type { PayloadTypeDef } from '../../src/payload/types.js';

const listener = (name: string, payload: string | string[], peers: string[] = []) => ({
  name,
  peers,
  payload: Array.isArray(payload) ? (payload[0] as string) : payload,
  ...(Array.isArray(payload) ? { payloadTypes: payload } : {}),
});

/** The block of the generated text that declares `name` (an interface or a map entry), up to its closing brace. */
function block(text: string, start: string): string {
  const at = text.indexOf(start);
  expect(at, `${start} in:\n${text}`).toBeGreaterThanOrEqual(0);
  return text.slice(at, text.indexOf('\n}', at) + 2);
}

describe('generateTypeDeclarations', () => {
  it('gives each field kind its TypeScript type, optional fields a ?, lists arrays (nested too) and references the interface', () => {
    const types: PayloadTypeDef[] = [
      definePayload('Address', { street: 'string' }),
      definePayload('Order', {
        id: 'integer',
        total: 'number',
        paid: 'boolean',
        note: 'string?',
        tags: 'string[]',
        grid: 'list<integer[]>',
        ship_to: 'Address',
        alternates: { type: 'Address[]', optional: true, description: 'Other addresses */ not closing' },
      }),
    ];
    const text = generateTypeDeclarations({ listeners: [], payloadTypes: types });
    expect(block(text, 'export interface Order {')).toBe(
      [
        'export interface Order {',
        '  id: number;',
        '  total: number;',
        '  paid: boolean;',
        '  note?: string;',
        '  tags: string[];',
        '  grid: number[][];',
        '  ship_to: Address;',
        '  /** Other addresses *\\/ not closing */',
        '  alternates?: Address[];',
        '}',
      ].join('\n'),
    );
    expect(block(text, 'export interface Address {')).toBe('export interface Address {\n  street: string;\n}');
    // The built-in types a listener may be handed are always there.
    expect(text).toContain('export interface SystemError {');
    expect(text).toContain('export interface BudgetWarning {');
  });

  it('types each listener: a union for payload: [A, B], its peers with the types each accepts, and what its senders accept', () => {
    const text = generateTypeDeclarations({
      listeners: [listener('intake', ['Ticket', 'Approval'], ['billing', 'tech']), listener('billing', 'Case'), listener('tech', 'Ticket', ['intake'])],
      payloadTypes: [definePayload('Ticket', { id: 'integer' }), definePayload('Approval', { ok: 'boolean' }), definePayload('Case', { id: 'integer' })],
    });
    const listeners = block(text, 'export type GeneratedListeners = {');
    expect(listeners).toContain('  intake: {\n    payload: "Ticket" | "Approval";\n    peers: { billing: "Case"; tech: "Ticket" };\n    replies: "Ticket";\n  };');
    expect(listeners).toContain('  billing: {\n    payload: "Case";\n    peers: {};\n    replies: "Ticket" | "Approval";\n  };');
    expect(listeners).toContain('  tech: {\n    payload: "Ticket";\n    peers: { intake: "Ticket" | "Approval" };\n    replies: "Ticket" | "Approval";\n  };');
    expect(text).toContain("declare module 'organism' {\n  interface OrganismTypes {\n    payloads: GeneratedPayloads;\n    listeners: GeneratedListeners;\n  }\n}\n");
    // Nobody names a listener as a peer: nothing is known of what its replies may be.
    const alone = generateTypeDeclarations({ listeners: [listener('solo', 'Ticket')], payloadTypes: [definePayload('Ticket', { id: 'integer' })] });
    expect(alone).toContain('    replies: never;');
  });

  it('quotes names that are not identifiers and gives their types unique interface names', () => {
    const text = generateTypeDeclarations({
      listeners: [listener('tech-support', 'support.Case', ['2nd line']), listener('2nd line', 'my-type')],
      payloadTypes: [
        definePayload('support.Case', { 'first-name': 'string', ref: 'my-type' }),
        definePayload('support_Case', { id: 'integer' }),
        definePayload('my-type', { x: 'string' }),
        definePayload('default', { x: 'string' }),
        definePayload('GeneratedPayloads', { x: 'string' }),
      ],
    });
    // The names that can be interfaces keep them; the others are mangled around them.
    expect(text).toContain('export interface support_Case {\n  id: number;\n}');
    expect(text).toContain('/** The payload type `support.Case`. */\nexport interface support_Case2 {\n  "first-name": string;\n  ref: my_type;\n}');
    expect(text).toContain('export interface my_type {');
    expect(text).toContain('export interface default_ {');
    expect(text).toContain('export interface GeneratedPayloads2 {');
    const payloads = block(text, 'export type GeneratedPayloads = {');
    expect(payloads).toContain('  "support.Case": support_Case2;');
    expect(payloads).toContain('  "my-type": my_type;');
    expect(payloads).toContain('  default: default_;');
    expect(payloads).toContain('  GeneratedPayloads: GeneratedPayloads2;');
    const listeners = block(text, 'export type GeneratedListeners = {');
    expect(listeners).toContain('  "tech-support": {\n    payload: "support.Case";\n    peers: { "2nd line": "my-type" };');
  });

  it('is deterministic: the same organism gives the same text whatever the order of its parts', () => {
    const a = definePayload('A', { x: 'string' });
    const b = definePayload('B', { y: 'integer' });
    const one = generateTypeDeclarations({ listeners: [listener('p', 'A', ['q']), listener('q', 'B')], payloadTypes: [a, b] });
    const two = generateTypeDeclarations({ listeners: [listener('q', 'B'), listener('p', 'A', ['q'])], payloadTypes: [b, a] });
    expect(two).toBe(one);
  });

  it('names helpers: property keys and interface names', () => {
    expect(propertyKey('ok_1')).toBe('ok_1');
    expect(propertyKey('a-b')).toBe('"a-b"');
    expect([...interfaceNames(['class', 'a.b', 'a_b', 'A']).entries()]).toEqual([
      ['a_b', 'a_b'],
      ['A', 'A'],
      ['class', 'class_'],
      ['a.b', 'a_b2'],
    ]);
  });
});
