import type { FieldDef, FieldType, PayloadTypeDef } from './types.js';

const PAYLOAD_BRAND = Symbol.for('organism.payloadType');

/** Field shorthand accepted by `definePayload`: a type name (`string`, `integer[]`, `Address?`) or a full FieldDef minus its name. */
export type FieldSpec = string | { type: string; optional?: boolean; description?: string };

/**
 * Parses a field type expression: `string`, `integer`, `number`, `boolean`, a payload type name,
 * `T[]` or `list<T>` for lists; a trailing `?` marks the field optional.
 * Returns null when the expression is malformed.
 */
export function parseTypeExpr(expr: string): { type: FieldType; optional: boolean } | null {
  let s = expr.trim();
  let optional = false;
  if (s.endsWith('?')) {
    optional = true;
    s = s.slice(0, -1).trim();
  }
  const type = parseInner(s);
  return type ? { type, optional } : null;
}

function parseInner(s: string): FieldType | null {
  if (s.endsWith('[]')) {
    const of = parseInner(s.slice(0, -2).trim());
    return of ? { kind: 'list', of } : null;
  }
  const m = /^list\s*<\s*(.+)\s*>$/.exec(s);
  if (m?.[1]) {
    const of = parseInner(m[1]);
    return of ? { kind: 'list', of } : null;
  }
  if (s === 'string' || s === 'integer' || s === 'number' || s === 'boolean') return { kind: s };
  if (/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(s)) return { kind: 'ref', name: s };
  return null;
}

/**
 * Declares a payload type in TypeScript. Handler modules export the result; the config
 * loader picks up every exported payload type.
 *
 *   export const Greeting = definePayload('Greeting', { name: 'string', tags: 'string[]?' });
 */
export function definePayload(name: string, fields: Record<string, FieldSpec>, options: { description?: string } = {}): PayloadTypeDef {
  const defs: FieldDef[] = Object.entries(fields).map(([fieldName, spec]) => {
    const s = typeof spec === 'string' ? { type: spec } : spec;
    const parsed = parseTypeExpr(s.type);
    if (!parsed) throw new TypeError(`definePayload(${name}): field ${fieldName} has an invalid type: ${s.type}`);
    const def: FieldDef = {
      name: fieldName,
      type: parsed.type,
      optional: (typeof spec !== 'string' && spec.optional) || parsed.optional,
      ...(s.description !== undefined ? { description: s.description } : {}),
    };
    return def;
  });
  const def: PayloadTypeDef = {
    name,
    fields: defs,
    ...(options.description !== undefined ? { description: options.description } : {}),
  };
  Object.defineProperty(def, PAYLOAD_BRAND, { value: true, enumerable: false });
  return Object.freeze(def);
}

/** True for values made by `definePayload` (how the loader finds types exported by modules). */
export function isPayloadTypeDef(value: unknown): value is PayloadTypeDef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PAYLOAD_BRAND] === true;
}
