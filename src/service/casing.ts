import type { FastifyRequest } from 'fastify';

/** Only snake_case names are renamed: `__proto__`, `_x` or `a__b` stay as given (and are named so in errors). */
const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;
const camel = (key: string): string => (SNAKE.test(key) ? key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : key);

/**
 * Renames snake_case keys to camelCase in place (`thread_id` -> `threadId`); a camelCase key
 * given as well wins. Only the listed nested objects are descended into: payload fields are
 * the user's own names and are never touched.
 */
export function camelizeKeys(target: unknown, nested: readonly string[] = []): void {
  if (typeof target !== 'object' || target === null || Array.isArray(target)) return;
  const obj = target as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const to = camel(key);
    if (to !== key) {
      if (!Object.hasOwn(obj, to)) obj[to] = obj[key];
      delete obj[key];
    }
  }
  for (const key of nested) camelizeKeys(obj[key], []);
}

/** Requests accept snake_case too: queries and bodies are camelized before validation (in the app's preValidation hook). */
export function camelizeRequest(request: FastifyRequest): void {
  camelizeKeys(request.query);
  camelizeKeys(request.body, ['metadata']);
}
