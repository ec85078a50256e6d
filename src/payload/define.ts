import type { Static, TObject } from 'typebox';
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
 * A payload type declared in code, carrying the TypeScript type of its data: `T` is read with
 * `StaticPayload<typeof Greeting>`. At run time it is a plain `PayloadTypeDef`.
 */
export interface PayloadDef<T = Record<string, unknown>> extends PayloadTypeDef {
  /** Type only, never set: the data this payload type describes. */
  readonly '~data'?: T;
}

/** The TypeScript type of the data of a code-declared payload type: `StaticPayload<typeof Greeting>`. */
export type StaticPayload<D> = D extends PayloadDef<infer T> ? T : never;

/** The TypeScript type of a field type expression (`integer`, `string[]`, `list<Address>`); another payload type reads as a record. */
export type FieldExprType<S extends string> = S extends `${infer I}[]`
  ? FieldExprType<I>[]
  : S extends `list<${infer I}>`
    ? FieldExprType<I>[]
    : S extends 'string'
      ? string
      : S extends 'integer' | 'number'
        ? number
        : S extends 'boolean'
          ? boolean
          : Record<string, unknown>;

/** The TypeScript type of one field spec of `definePayload` (`'string[]?'`, `{ type: 'integer' }`). */
export type FieldSpecType<F> = F extends `${infer E}?`
  ? FieldExprType<E>
  : F extends string
    ? FieldExprType<F>
    : F extends { readonly type: `${infer E}?` }
      ? FieldExprType<E>
      : F extends { readonly type: infer E extends string }
        ? FieldExprType<E>
        : unknown;

/** True when a field spec is optional: a trailing `?` or `optional: true`. */
export type FieldSpecOptional<F> = F extends `${string}?` ? true : F extends { readonly optional: true } ? true : F extends { readonly type: `${string}?` } ? true : false;

/** The data of a payload type declared with field specs: `{ name: 'string', tags: 'string[]?' }` is `{ name: string; tags?: string[] }`. */
export type FieldsData<F extends Readonly<Record<string, FieldSpec>>> = {
  [K in keyof ({ -readonly [P in keyof F as FieldSpecOptional<F[P]> extends true ? never : P]: FieldSpecType<F[P]> } & {
    -readonly [P in keyof F as FieldSpecOptional<F[P]> extends true ? P : never]?: FieldSpecType<F[P]>;
  })]: ({ -readonly [P in keyof F as FieldSpecOptional<F[P]> extends true ? never : P]: FieldSpecType<F[P]> } & {
    -readonly [P in keyof F as FieldSpecOptional<F[P]> extends true ? P : never]?: FieldSpecType<F[P]>;
  })[K];
};

/**
 * Declares a payload type in TypeScript. Handler modules export the result; the config
 * loader picks up every exported payload type. The result carries the type of its data
 * (`StaticPayload<typeof Greeting>`), from field specs or from a TypeBox schema:
 *
 *   export const Greeting = definePayload('Greeting', { name: 'string', tags: 'string[]?' });
 *   export const Order = definePayload('Order', Type.Object({ id: Type.Integer(), lines: Type.Array(Type.Ref('Line')) }));
 *
 * A TypeBox `Type.Object` is one schema for the type, its JSON Schema and its validation; its
 * properties may be `Type.String()`, `Type.Integer()`, `Type.Number()`, `Type.Boolean()`,
 * `Type.Array(...)` of those, `Type.Ref('OtherPayloadType')`, each maybe `Type.Optional`.
 * Anything else (enums, unions, nested objects) is refused: payload fields have no such kinds.
 */
export function definePayload<const F extends Readonly<Record<string, FieldSpec>>>(name: string, fields: F, options?: { description?: string }): PayloadDef<FieldsData<F>>;
/** Declares a payload type from a TypeBox `Type.Object`: the schema gives its fields and its data type (`Static<S>`). */
export function definePayload<S extends TObject>(name: string, schema: S, options?: { description?: string }): PayloadDef<Static<S>>;
export function definePayload(name: string, fields: Readonly<Record<string, FieldSpec>> | TObject, options: { description?: string } = {}): PayloadDef {
  if (isObjectSchema(fields)) return fromSchema(name, fields, options);
  const defs: FieldDef[] = Object.entries(fields as Readonly<Record<string, FieldSpec>>).map(([fieldName, spec]) => {
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
  return brand(name, defs, options.description);
}

function brand(name: string, fields: FieldDef[], description: string | undefined): PayloadDef {
  const def: PayloadTypeDef = { name, fields, ...(description !== undefined ? { description } : {}) };
  Object.defineProperty(def, PAYLOAD_BRAND, { value: true, enumerable: false });
  return Object.freeze(def);
}

interface JsonSchema {
  readonly type?: unknown;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema;
  readonly $ref?: unknown;
  readonly description?: unknown;
}

/** A TypeBox `Type.Object` (or a JSON Schema of an object): what definePayload takes instead of field specs. */
function isObjectSchema(value: unknown): value is JsonSchema {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as JsonSchema & { readonly '~kind'?: unknown };
  return v['~kind'] === 'Object' || (v.type === 'object' && typeof v.properties === 'object' && v.properties !== null);
}

function fromSchema(name: string, schema: JsonSchema, options: { description?: string }): PayloadDef {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([fieldName, prop]): FieldDef => {
    const type = schemaFieldType(prop, `definePayload(${name}): field ${fieldName}`);
    const description = typeof prop.description === 'string' ? prop.description : undefined;
    return { name: fieldName, type, optional: !required.has(fieldName), ...(description !== undefined ? { description } : {}) };
  });
  const description = options.description ?? (typeof schema.description === 'string' ? schema.description : undefined);
  return brand(name, fields, description);
}

/** `Type.Enum`, `Type.Literal`, or a union of literals (`anyOf` of constants). */
function isEnum(schema: JsonSchema): boolean {
  const alternatives = (schema as { anyOf?: unknown }).anyOf;
  return 'enum' in schema || 'const' in schema || (Array.isArray(alternatives) && alternatives.length > 0 && alternatives.every((a) => typeof a === 'object' && a !== null && 'const' in a));
}

function schemaFieldType(schema: JsonSchema, where: string): FieldType {
  if (typeof schema.$ref === 'string') {
    const ref = schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1);
    const parsed = parseInner(ref);
    if (parsed?.kind === 'ref') return parsed;
    throw new TypeError(`${where}: $ref ${schema.$ref} does not name a payload type`);
  }
  if (isEnum(schema)) throw new TypeError(`${where}: enums and constants are not payload field kinds; use Type.String() (or Type.Integer()) and say the allowed values in its description`);
  const t = schema.type;
  if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return { kind: t };
  if (t === 'array' && schema.items) return { kind: 'list', of: schemaFieldType(schema.items, where) };
  if (t === 'object') throw new TypeError(`${where}: a nested object must be a payload type of its own: definePayload('Name', ...) and Type.Ref('Name')`);
  throw new TypeError(`${where}: only Type.String, Type.Integer, Type.Number, Type.Boolean, Type.Array and Type.Ref are payload field kinds (got ${JSON.stringify(schema)})`);
}

/** True for values made by `definePayload` (how the loader finds types exported by modules). */
export function isPayloadTypeDef(value: unknown): value is PayloadTypeDef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PAYLOAD_BRAND] === true;
}
