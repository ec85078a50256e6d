import type { FastifyInstance, FastifyRequest, preValidationHookHandler } from 'fastify';
import { camelizeRequest } from './casing.js';
import { Errors } from '../errors/catalogue.js';
import { identifierReason } from '../util/storable-text.js';
import { routeConfig } from './route-config.js';
import type { FieldProblem } from './validation.js';

/** What a route's query string may hold, read once from its querystring schema. */
export interface QueryRules {
  /** Every accepted parameter name (camelCase; snake_case is renamed before the check). */
  readonly names: readonly string[];
  /** Parameters the schema types as integer or number: they must be written as decimal integers. */
  readonly integers: ReadonlySet<string>;
  /** The schema allows parameters it does not name. */
  readonly open: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the query check on every route it guards. */
    queryRules?: QueryRules;
    /** Top-level body fields the route's body schema types as integer or number. */
    bodyNumbers?: readonly string[];
    /** The route takes no body: its request is checked in the onRequest hook, not at preValidation. */
    checkAtRequest?: boolean;
  }
}

interface JsonSchemaLike {
  readonly type?: unknown;
  readonly properties?: Record<string, JsonSchemaLike>;
  readonly additionalProperties?: unknown;
}

export function queryRules(schema: unknown): QueryRules {
  const s = (typeof schema === 'object' && schema !== null ? schema : {}) as JsonSchemaLike;
  const properties = s.properties ?? {};
  const integers = new Set<string>();
  for (const [name, p] of Object.entries(properties)) {
    const types = Array.isArray(p.type) ? p.type : [p.type];
    if (types.includes('integer') || types.includes('number')) integers.add(name);
  }
  return { names: Object.keys(properties), integers, open: s.additionalProperties === true };
}

/** Plain decimal digits, an optional minus, no leading zeros and not `-0`. */
const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;

const shown = (value: string): string => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);

/**
 * The problems of one query string, or none. Ajv's type coercion alone would read `0x10` as
 * 16, `1e309` as Infinity, `-0` as 0 and twenty nines as 1e20 (which then reach the stores);
 * here a number is what a person writes: decimal digits within the safe integer range. Unknown
 * parameters are refused with the valid ones listed, so a misspelt filter is not silently ignored.
 */
export function queryProblems(query: unknown, rules: QueryRules): FieldProblem[] {
  if (typeof query !== 'object' || query === null) return [];
  const problems: FieldProblem[] = [];
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    if (!rules.open && !rules.names.includes(name)) {
      const valid = rules.names.length > 0 ? `valid parameters: ${rules.names.join(', ')}` : 'this route takes no query parameters';
      problems.push({ location: 'querystring', field: name, message: `is not a parameter of this route (${valid})` });
      continue;
    }
    if (!rules.integers.has(name)) continue;
    if (typeof value !== 'string') {
      problems.push({ location: 'querystring', field: name, message: 'must be given once' });
      continue;
    }
    if (!DECIMAL_INTEGER.test(value)) {
      problems.push({ location: 'querystring', field: name, message: `must be a decimal integer (digits only, e.g. 50), not ${shown(value)}` });
    } else if (!Number.isSafeInteger(Number(value))) {
      problems.push({ location: 'querystring', field: name, message: `is out of range: ${shown(value)}` });
    }
  }
  return problems;
}

/**
 * Numbers of a JSON body must be JSON numbers: ajv's type coercion would take the strings
 * `"0x10"` as 16, `"1e3"` as 1000 and `" 5"` as 5. (JSON number tokens such as `1e3` are numbers
 * and stay for the schema to bound; `1e309` parses as Infinity, which the schema refuses.)
 */
export function bodyNumberProblems(body: unknown, names: readonly string[]): FieldProblem[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  return names.flatMap((name) => {
    const value = (body as Record<string, unknown>)[name];
    return typeof value === 'string' ? [{ location: 'body', field: name, message: `must be a JSON number (e.g. 1000), not the string ${shown(value)}` }] : [];
  });
}

/**
 * Path and query parameters name things (thread and message ids, agents, models, organizations)
 * or are numbers, times and states: none holds a control character, a NUL or a lone surrogate.
 * Refused by name here, the same on every store (PostgreSQL would fail the lookup with an
 * encoding error, SQLite would look it up).
 */
export function identifierProblems(values: unknown, location: 'params' | 'querystring'): FieldProblem[] {
  if (typeof values !== 'object' || values === null) return [];
  const problems: FieldProblem[] = [];
  for (const [name, value] of Object.entries(values as Record<string, unknown>)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      const reason = typeof v === 'string' ? identifierReason(v, name === 'text') : null;
      if (reason) {
        problems.push({ location, field: name, message: reason });
        break;
      }
    }
  }
  return problems;
}

/**
 * Guards the query string of every route that is not a WebSocket route (those read `token`,
 * `since` and filters themselves): reads each route's rules once, from its schemas. The check
 * itself (queryCheck) runs after the snake_case renaming and before ajv coerces the values.
 */
export function registerQueryCheck(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // A route that takes no body is checked in the app's onRequest hook (earlyRequestCheck), so
    // that most reads run no preValidation stage at all; one that may take a body at preValidation,
    // once the body is parsed (its own hook, on that route only).
    const bodyless = methods.every((m) => m === 'GET' || m === 'HEAD');
    if (!bodyless) route.preValidation = [...hookList(route.preValidation), checkHook];
    if ((route as { websocket?: boolean }).websocket === true) {
      route.config = { ...(route.config ?? {}), checkAtRequest: true };
      return;
    }
    const schema = route.schema as { querystring?: unknown } | undefined;
    const body = (schema as { body?: unknown } | undefined)?.body;
    route.config = { ...(route.config ?? {}), queryRules: queryRules(schema?.querystring), bodyNumbers: [...queryRules(body).integers], checkAtRequest: bodyless };
  });
}

const hookList = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);

const checkHook: preValidationHookHandler = (request, _reply, done) => {
  const problem = checkRequest(request);
  if (problem) return done(problem);
  done();
};

/** snake_case keys renamed (casing.ts), then the strict check of parameters, query and body numbers. */
function checkRequest(request: FastifyRequest): Error | null {
  camelizeRequest(request);
  return queryCheck(request);
}

/** The check of a route that takes no body, run by the app's onRequest hook after auth (null: none, or nothing wrong). */
export function earlyRequestCheck(request: FastifyRequest): Error | null {
  return routeConfig(request).checkAtRequest === true ? checkRequest(request) : null;
}

/**
 * The 400 a request's parameters, query and body numbers earn, or null. Nothing is built for
 * a request with no parameters, no query and no numbers in its body (most reads).
 */
export function queryCheck(request: FastifyRequest): Error | null {
  const config = routeConfig(request);
  const rules = config.queryRules;
  const bodyNumbers = config.bodyNumbers ?? [];
  if (!rules || (!hasKeys(request.params) && !hasKeys(request.query) && (bodyNumbers.length === 0 || request.body === undefined))) return null;
  const problems = [
    ...identifierProblems(request.params, 'params'),
    ...queryProblems(request.query, rules),
    ...identifierProblems(request.query, 'querystring'),
    ...bodyNumberProblems(request.body, bodyNumbers),
  ];
  return problems.length > 0 ? Errors.INVALID_REQUEST.withData(problems, problems.map((p) => `${p.field} ${p.message}`).join('; ')) : null;
}

function hasKeys(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  for (const _ in value) return true;
  return false;
}
