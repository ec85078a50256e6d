/**
 * The payload type model. One definition per type yields validation (JSON and XML), an XSD,
 * an example XML document and a JSON Schema (see payload/compile.ts).
 */
export type ScalarKind = 'string' | 'integer' | 'number' | 'boolean';

export type FieldType =
  | { readonly kind: ScalarKind }
  | { readonly kind: 'list'; readonly of: FieldType }
  /** Another payload type, by name, used as a nested structure. */
  | { readonly kind: 'ref'; readonly name: string };

export interface FieldDef {
  readonly name: string;
  readonly type: FieldType;
  readonly optional: boolean;
  readonly description?: string;
}

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

export type ValidationResult<T = Record<string, unknown>> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errors: readonly FieldError[] };
