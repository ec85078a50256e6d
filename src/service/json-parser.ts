import type { FastifyInstance } from 'fastify';
import { Errors, type OrganismError } from '../errors/catalogue.js';

/** Keys that could change an object's prototype once a body is copied or merged. */
const MAY_POISON = /__proto__|constructor|\\u/;

/**
 * Where a parsed body holds `__proto__`, or `constructor` with a `prototype` inside (the
 * prototype-poisoning shapes Fastify's own parser refuses), named as `body.a.b[2]`; walked
 * without recursion, so a deeply nested body cannot overflow the stack.
 */
export function forbiddenKey(value: unknown): { key: string; at: string } | null {
  const stack: Array<[unknown, string]> = [[value, 'body']];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      v.forEach((item, i) => void stack.push([item, `${at}[${i}]`]));
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      if (key === '__proto__') return { key: '__proto__', at: `${at}.__proto__` };
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype')) {
        return { key: 'constructor.prototype', at: `${at}.constructor.prototype` };
      }
      stack.push([child, `${at}.${key}`]);
    }
  }
  return null;
}

/** The body's value, or the error saying what is wrong with it and where. */
export function parseJsonBody(text: string): { value: unknown } | { error: OrganismError } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // A SyntaxError names the position; a RangeError means nesting too deep to parse.
    const reason = err instanceof RangeError ? 'nested too deeply' : err instanceof Error ? err.message : String(err);
    return { error: Errors.MALFORMED_JSON(reason.length > 200 ? `${reason.slice(0, 200)}...` : reason) };
  }
  const found = MAY_POISON.test(text) ? forbiddenKey(value) : null;
  if (found) return { error: Errors.FORBIDDEN_JSON_KEY(found.key, found.at) };
  return { value };
}

/**
 * JSON bodies: an empty body is "no body" (`curl -X POST -H 'content-type: application/json'`
 * on a route without a body should not be a 400); a malformed one is refused with the parser's
 * reason and position; prototype-poisoning keys are refused by name and place.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    const parsed = parseJsonBody(text);
    if ('error' in parsed) done(parsed.error, undefined);
    else done(null, parsed.value);
  });
}
