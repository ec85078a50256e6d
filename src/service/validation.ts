import type { FastifySchemaValidationError } from 'fastify';
import { Errors, type OrganismError } from '../errors/catalogue.js';

export interface FieldProblem {
  readonly location: string;
  readonly field: string;
  readonly message: string;
}

/** `/metadata/orgId` -> `metadata.orgId`; `/items/0` -> `items[0]`. */
function dotted(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
}

/** One ajv error as an operator reads it: the parameter, then the bound (`limit must be <= 100`). */
export function describeProblem(context: string, e: FastifySchemaValidationError): FieldProblem {
  const params = e.params ?? {};
  let field = dotted(e.instancePath);
  let message = e.message ?? 'is invalid';
  if (e.keyword === 'required' && typeof params['missingProperty'] === 'string') {
    field = field ? `${field}.${params['missingProperty']}` : params['missingProperty'];
    message = 'is required';
  } else if (e.keyword === 'enum' && Array.isArray(params['allowedValues'])) {
    message = `must be one of ${params['allowedValues'].map(String).join(', ')}`;
  } else if (e.keyword === 'additionalProperties' && typeof params['additionalProperty'] === 'string') {
    // Named as the key itself (`body.budget`, `body.metadata.tenant`), like an unknown query parameter.
    field = field ? `${field}.${params['additionalProperty']}` : params['additionalProperty'];
    message = 'is not a field of this request';
  } else if (e.keyword === 'type' && typeof params['type'] === 'string') {
    message = `must be ${params['type'] === 'object' ? 'an object' : `a${/^[aeiou]/.test(params['type']) ? 'n' : ''} ${params['type']}`}`;
  }
  if (!field) field = context === 'querystring' ? 'query' : context;
  else if (context === 'body') field = `body.${field}`;
  return { location: context, field, message };
}

/** The 422 for a request that failed schema validation; the detail names every bad parameter. */
export function validationError(context: string | undefined, errors: readonly FastifySchemaValidationError[]): OrganismError {
  const problems = errors.map((e) => describeProblem(context ?? 'request', e));
  const seen = new Set<string>();
  const unique = problems.filter((p) => {
    const key = `${p.field} ${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const detail = unique.map((p) => `${p.field} ${p.message}`).join('; ');
  return Errors.INVALID_REQUEST.withData(unique, detail);
}
