import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from './fixture.js';

let svc: Service;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
});

describe('GET /api/v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (independent validator)', async () => {
    const res = await svc.request('GET', '/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const result = await new Validator().validate(res.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents bearer auth, and /health as open', async () => {
    const doc = (await svc.request('GET', '/api/v1/openapi.json')).body;
    expect(doc.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/health'].get.security).toEqual([]);
  });

  it('documents an error body with detail for every route', async () => {
    const doc = (await svc.request('GET', '/api/v1/openapi.json')).body;
    for (const [path, methods] of Object.entries<Record<string, { responses: Record<string, unknown> }>>(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const schema = (op.responses['4XX'] as { content: { 'application/json': { schema: { required: string[] } } } })?.content['application/json'].schema;
        expect(schema?.required, `${method} ${path}`).toContain('detail');
      }
    }
  });

  it('says that a failed reload answers 500 (RELOAD_INVALID for an invalid file) and its dry run 422', async () => {
    const doc = (await svc.request('GET', '/api/v1/openapi.json')).body;
    const reload = doc.paths['/api/v1/organism/reload'].post as { description: string };
    expect(reload.description).toMatch(/answers 500/);
    expect(reload.description).toMatch(/500 with `code: RELOAD_INVALID`/);
    expect(reload.description).toMatch(/dryRun=true the same problems answer 422/);
  });

  it('the checker rejects a response that does not match (it really checks)', () => {
    expect(() => svc.checker.check('GET', '/api/v1/organism', 200, { name: 1 })).toThrow(/does not match/);
    expect(() => svc.checker.check('GET', '/api/v1/agents/x', 404, { code: 'X' })).toThrow(/does not match/);
  });
});
