import Fastify from 'fastify';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { Nullable, NullableTimestamp } from '../../src/service/schemas/common.js';
import { camelizeKeys } from '../../src/service/casing.js';
import { toOrganismError } from '../../src/service/errors.js';
import { parseTime, parseTimeRange } from '../../src/service/time.js';
import { validationError } from '../../src/service/validation.js';

describe('camelizeKeys', () => {
  it('renames snake_case keys, lets camelCase win, and leaves payload fields alone', () => {
    const body: Record<string, unknown> = {
      thread_id: 't1',
      to: 'a',
      payload: { first_name: 'x' },
      metadata: { org_id: 'o', userId: 'u', user_id: 'ignored' },
    };
    camelizeKeys(body, ['metadata']);
    expect(body).toEqual({ threadId: 't1', to: 'a', payload: { first_name: 'x' }, metadata: { orgId: 'o', userId: 'u' } });
  });

  it('ignores non-objects', () => {
    for (const v of [null, undefined, 'x', 1, [1, 2]]) expect(() => camelizeKeys(v)).not.toThrow();
  });
});

describe('parseTime', () => {
  it('accepts dates and times with a zone', () => {
    expect(parseTime('startTime', '2025-01-31')).toBe(Date.UTC(2025, 0, 31));
    expect(parseTime('startTime', '2025-01-31T12:00:00Z')).toBe(Date.UTC(2025, 0, 31, 12));
    expect(parseTime('startTime', '2025-01-31T12:00:00.5+01:00')).toBe(Date.UTC(2025, 0, 31, 11, 0, 0, 500));
    expect(parseTime('startTime', undefined)).toBeUndefined();
  });

  it.each(['yesterday', '1', '2025-13-01', '2025-01-31T12:00:00', '2025-01-31T25:00:00Z', 'March 7'])('rejects %s with a 422 naming the parameter', (v) => {
    try {
      parseTime('endTime', v);
      expect.unreachable();
    } catch (err) {
      expect((err as { status: number }).status).toBe(422);
      expect((err as Error).message).toMatch(/^endTime must be an ISO 8601 date or time/);
    }
  });

  it('rejects a reversed range', () => {
    expect(() => parseTimeRange('2025-02-01', '2025-01-01')).toThrow('startTime (2025-02-01) must not be after endTime (2025-01-01)');
  });
});

describe('validation errors', () => {
  it('name the parameter and the bound', () => {
    const err = validationError('querystring', [
      { keyword: 'maximum', instancePath: '/limit', schemaPath: '', params: { limit: 100 }, message: 'must be <= 100' },
      { keyword: 'type', instancePath: '/offset', schemaPath: '', params: { type: 'integer' }, message: 'must be integer' },
    ]);
    expect(err.status).toBe(422);
    expect(err.detail).toBe('limit must be <= 100; offset must be an integer');
  });

  it('name nested body fields and missing ones', () => {
    const err = validationError('body', [
      { keyword: 'required', instancePath: '', schemaPath: '', params: { missingProperty: 'to' }, message: "must have required property 'to'" },
      { keyword: 'type', instancePath: '/metadata/orgId', schemaPath: '', params: { type: 'string' }, message: 'must be string' },
    ]);
    expect(err.detail).toBe('body.to is required; body.metadata.orgId must be a string');
  });
});

describe('toOrganismError', () => {
  it('keeps client faults as 4xx and hides unexpected ones behind a generic 500', () => {
    expect(toOrganismError(Object.assign(new Error('bad url'), { statusCode: 400, code: 'FST_ERR_BAD_URL' })).error.status).toBe(400);
    const unexpected = toOrganismError(new TypeError('cannot read x of undefined'));
    expect(unexpected.unexpected).toBe(true);
    expect(unexpected.error.status).toBe(500);
    expect(unexpected.error.detail).toBe('Internal server error');
  });
});

describe('Nullable schemas', () => {
  it('are type lists, so the response serializer picks by type instead of validating each value against union branches', async () => {
    expect(NullableTimestamp).toMatchObject({ type: ['string', 'null'], format: 'date-time' });
    expect(Nullable(Type.Object({ a: Type.Integer() }))).toMatchObject({ type: ['object', 'null'], properties: { a: { type: 'integer' } } });
    const app = Fastify();
    let body: unknown = null;
    app.get('/', { schema: { response: { 200: Type.Object({ at: NullableTimestamp, n: Nullable(Type.Integer()) }) } } }, async () => body);
    body = { at: null, n: null };
    expect((await app.inject('/')).body).toBe('{"at":null,"n":null}');
    body = { at: '2025-01-31T12:00:00.000Z', n: 3 };
    expect((await app.inject('/')).body).toBe('{"at":"2025-01-31T12:00:00.000Z","n":3}');
    await app.close();
  });

  it('refuse a schema without a single type, where a type list cannot be formed', () => {
    expect(() => Nullable(Type.Union([Type.String(), Type.Integer()]))).toThrow('single type');
  });
});
