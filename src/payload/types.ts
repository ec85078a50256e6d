/**
 * The payload type model. One definition per type yields validation (JSON and XML), an XSD,
 * an example XML document and a JSON Schema (see payload/compile.ts).
 */
export type ScalarKind = 'string' | 'integer' | 'number' | 'boolean';

/** The type of one payload field: a scalar, a list, or another payload type by name. */
export type FieldType =
  | { readonly kind: ScalarKind }
  | { readonly kind: 'list'; readonly of: FieldType }
  /** Another payload type, by name, used as a nested structure. */
  | { readonly kind: 'ref'; readonly name: string };

/** One field of a payload type. */
export interface FieldDef {
  readonly name: string;
  readonly type: FieldType;
  readonly optional: boolean;
  readonly description?: string;
}

/** A payload type: its name and fields (from organism.yaml, `definePayload` or the built-ins). */
export interface PayloadTypeDef {
  readonly name: string;
  readonly description?: string;
  readonly fields: readonly FieldDef[];
}

/** One problem with a payload: where (dotted path, e.g. `items[2].name`) and what. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/** The outcome of validating a payload: the value, or every field error. */
export type ValidationResult<T = Record<string, unknown>> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly FieldError[] };
