import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, VIEWER, type Service } from './fixture.js';

let svc: Service;
beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.close();
});

describe('HEAD requests follow the access rules of their GET route', () => {
  it.each([
    ['/health', null, 200],
    ['/api/v1/organism', VIEWER, 200],
    ['/api/v1/organism', null, 401],
    ['/api/v1/capabilities', VIEWER, 403],
  ] as const)('HEAD %s (%s) -> %i', async (path, token, status) => {
    const res = await fetch(`${svc.url}${path}`, { method: 'HEAD', headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect(res.status).toBe(status);
  });
});
