import { describe, expect, it } from 'vitest';
import { Errors, OrganismError } from '../../src/errors/catalogue.js';
import { definePayload } from '../../src/payload/define.js';
import { resolveInjectPayload, summarizeFieldErrors } from '../../src/payload/inject.js';
import { PayloadRegistry } from '../../src/payload/registry.js';

const Greeting = definePayload('Greeting', { name: 'string', age: 'integer?' });
const Address = definePayload('Address', { street: 'string' });
const Ping = definePayload('Ping', { note: 'string?' });
/** A type with a field that happens to be named like another registered type. */
const Envelope = definePayload('Envelope', { Address: 'Address', note: 'string?' });
const reg = new PayloadRegistry([Greeting, Address, Ping, Envelope]);
const greeting = reg.get('Greeting')!;

function thrown(fn: () => unknown): OrganismError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(OrganismError);
    return e as OrganismError;
  }
  throw new Error('expected an error');
}

describe('resolveInjectPayload', () => {
  it('takes the payload type from the first key', () => {
    expect(resolveInjectPayload({ Greeting: { name: 'Dan' } }, greeting, reg)).toEqual({ payloadType: 'Greeting', payload: { name: 'Dan' } });
  });

  it('accepts the bare fields of the one type the target accepts', () => {
    expect(resolveInjectPayload({ name: 'Dan', age: 40 }, greeting, reg)).toEqual({ payloadType: 'Greeting', payload: { name: 'Dan', age: 40 } });
  });

  it('reads a first key that is a field of the accepted type as a field, even if a type has that name', () => {
    const envelope = reg.get('Envelope')!;
    expect(resolveInjectPayload({ Address: { street: 'x' } }, envelope, reg)).toEqual({ payloadType: 'Envelope', payload: { Address: { street: 'x' } } });
  });

  it('refuses another registered type for this target', () => {
    const e = thrown(() => resolveInjectPayload({ Address: { street: 'x' } }, greeting, reg, 'greeter'));
    expect(e.code).toBe('WRONG_PAYLOAD_TYPE');
    expect(e.detail).toBe(Errors.WRONG_PAYLOAD_TYPE('greeter', 'Greeting', 'Address').detail);
    expect(e.detail).toBe('Listener greeter accepts Greeting, not Address');
  });

  it('names every bad field in one error, with the field errors attached', () => {
    const e = thrown(() => resolveInjectPayload({ name: 5, colour: 'red' }, greeting, reg));
    expect(e.code).toBe('INVALID_PAYLOAD');
    expect(e.status).toBe(422);
    expect(e.detail).toBe('Invalid Greeting payload: colour: unknown field (Greeting has: name, age); name: expected string, got integer 5');
    expect(e.data).toEqual([
      { path: 'colour', message: 'unknown field (Greeting has: name, age)' },
      { path: 'name', message: 'expected string, got integer 5' },
    ]);
  });

  it('validates the fields under the type key the same way', () => {
    const e = thrown(() => resolveInjectPayload({ Greeting: { age: 'x' } }, greeting, reg));
    expect(e.detail).toBe('Invalid Greeting payload: name: required field missing; age: expected integer, got string "x"');
    expect(thrown(() => resolveInjectPayload({ Greeting: 'Dan' }, greeting, reg)).detail).toBe('Invalid Greeting payload: (payload): expected an object (Greeting), got string "Dan"');
  });

  it('refuses keys beside the type key', () => {
    const e = thrown(() => resolveInjectPayload({ Greeting: { name: 'Dan' }, extra: 1 }, greeting, reg));
    expect(e.detail).toBe('Invalid Greeting payload: extra: unexpected key beside the payload type key Greeting');
  });

  it('an empty payload is fine for a type without required fields, else names the missing ones', () => {
    expect(resolveInjectPayload({}, reg.get('Ping')!, reg)).toEqual({ payloadType: 'Ping', payload: {} });
    expect(resolveInjectPayload({ Ping: {} }, reg.get('Ping')!, reg)).toEqual({ payloadType: 'Ping', payload: {} });
    expect(thrown(() => resolveInjectPayload({}, greeting, reg)).detail).toBe('Invalid Greeting payload: name: required field missing');
  });

  it('the payload must be a JSON object', () => {
    for (const body of ['hi', 3, null, [1], undefined]) {
      const e = thrown(() => resolveInjectPayload(body, greeting, reg));
      expect(e.code).toBe('INVALID_PAYLOAD');
      expect(e.detail).toBe('Invalid Greeting payload: (payload): payload must be a JSON object');
    }
  });

  it('summarizeFieldErrors joins path and message', () => {
    expect(
      summarizeFieldErrors([
        { path: 'a[0].b', message: 'm' },
        { path: '', message: 'n' },
      ]),
    ).toBe('a[0].b: m; (payload): n');
  });
});
