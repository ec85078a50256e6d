import { isMap, isScalar, type Node } from 'yaml';
import { definePayload, type FieldSpec, parseTypeExpr } from '../payload/define.js';
import type { FieldType, PayloadTypeDef } from '../payload/types.js';
import { BUDGET_WARNING_TYPE, SYSTEM_ERROR_TYPE } from '../core/message.js';
import { ConfigMessages, Expected } from './messages.js';
import { describeNode, MapReader, type ProblemSink } from './reader.js';
import { Keys } from './schema.js';
import { closest } from './suggest.js';

/** Types the runtime itself delivers; every organism knows them without declaring them. */
export const BUILTIN_PAYLOAD_TYPES: readonly string[] = [SYSTEM_ERROR_TYPE, BUDGET_WARNING_TYPE];

const SCALARS = ['string', 'integer', 'number', 'boolean'];
/** Names other languages use for the scalar types, for "did you mean". */
const SCALAR_ALIASES: Readonly<Record<string, string>> = {
  int: 'integer',
  int32: 'integer',
  int64: 'integer',
  long: 'integer',
  uint: 'integer',
  float: 'number',
  double: 'number',
  decimal: 'number',
  num: 'number',
  float64: 'number',
  bool: 'boolean',
  str: 'string',
  text: 'string',
  char: 'string',
};
const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

interface FieldDraft {
  readonly name: string;
  readonly spec: Exclude<FieldSpec, string>;
  readonly type: FieldType;
  readonly optional: boolean;
  /** Where to point when the field's type is wrong. */
  readonly node: Node;
  readonly path: string;
}

/** A payload type declared in YAML, kept with its nodes until every type name is known. */
export interface PayloadDraft {
  readonly name: string;
  readonly description: string | undefined;
  readonly fields: readonly FieldDraft[];
  readonly node: Node;
  readonly path: string;
}

/** Where a payload type came from, for duplicate and dangling-reference messages. */
export interface TypeOrigin {
  readonly def: PayloadTypeDef;
  readonly fromYaml: boolean;
  /** e.g. `organism.yaml` or `./tools.ts`. */
  readonly source: string;
  /** Problem location for types exported by modules: the first handler that loads the module. */
  readonly node: Node | null;
  readonly path: string;
}

export function readPayloadDrafts(payloads: MapReader | null): PayloadDraft[] {
  if (!payloads) return [];
  const drafts: PayloadDraft[] = [];
  for (const name of payloads.keys()) {
    const typeNode = payloads.valueNode(name);
    const path = payloads.pathOf(name);
    if (!TYPE_NAME.test(name) || SCALARS.includes(name) || name === 'list') {
      payloads.sink.add(payloads.keyNode(name), path, ConfigMessages.invalidName('payload type', name));
      continue;
    }
    if (BUILTIN_PAYLOAD_TYPES.includes(name)) {
      payloads.sink.add(payloads.keyNode(name), path, ConfigMessages.builtinPayloadType(name));
      continue;
    }
    const reader = typeNode === null ? null : MapReader.open(payloads.sink, typeNode, path, Keys.payloadType);
    if (typeNode !== null && !reader) continue;
    const description = reader?.string('description') ?? undefined;
    const fieldsReader = reader?.map('fields', null) ?? null;
    drafts.push({
      name,
      description,
      fields: fieldsReader ? readFields(fieldsReader) : [],
      node: payloads.keyNode(name) ?? payloads.node,
      path,
    });
  }
  return drafts;
}

function readFields(fields: MapReader): FieldDraft[] {
  const out: FieldDraft[] = [];
  for (const fieldName of fields.keys()) {
    const path = fields.pathOf(fieldName);
    if (!FIELD_NAME.test(fieldName)) {
      fields.sink.add(fields.keyNode(fieldName), path, ConfigMessages.invalidFieldName(fieldName));
      continue;
    }
    const node = fields.valueNode(fieldName);
    let spec: Exclude<FieldSpec, string> | null = null;
    let typeNode: Node | null = node;
    if (node !== null && isScalar(node) && typeof node.value === 'string') {
      spec = { type: node.value };
    } else if (node !== null && isMap(node)) {
      const r = new MapReader(fields.sink, node, path, Keys.field);
      const type = r.string('type', true);
      typeNode = r.nodeFor('type');
      if (type !== null) {
        const description = r.string('description');
        spec = { type, optional: r.boolean('optional', false), ...(description !== null ? { description } : {}) };
      }
    } else {
      fields.sink.add(node ?? fields.keyNode(fieldName), path, ConfigMessages.wrongType(Expected.fieldType, describeNode(node)));
    }
    if (!spec || typeNode === null) continue;
    const parsed = parseTypeExpr(spec.type);
    if (!parsed) {
      fields.sink.add(typeNode, isMap(node) ? `${path}.type` : path, ConfigMessages.badFieldType(spec.type));
      continue;
    }
    out.push({
      name: fieldName,
      spec,
      type: parsed.type,
      optional: parsed.optional || spec.optional === true,
      node: typeNode,
      path: isMap(node) ? `${path}.type` : path,
    });
  }
  return out;
}

function refName(type: FieldType): string | null {
  if (type.kind === 'ref') return type.name;
  if (type.kind === 'list') return refName(type.of);
  return null;
}

/** Builds the YAML types (branded like `definePayload` output) once drafts are complete. */
export function buildPayloadDefs(drafts: readonly PayloadDraft[]): PayloadTypeDef[] {
  return drafts.map((d) => definePayload(d.name, Object.fromEntries(d.fields.map((f) => [f.name, f.spec])), d.description !== undefined ? { description: d.description } : {}));
}

/**
 * Checks the whole set of payload types: duplicate names across YAML and modules, field
 * references to unknown types, and types that contain themselves through required fields.
 */
export function checkPayloadTypes(sink: ProblemSink, drafts: readonly PayloadDraft[], origins: readonly TypeOrigin[]): void {
  const byName = new Map<string, TypeOrigin>();
  for (const o of origins) {
    const first = byName.get(o.def.name);
    if (BUILTIN_PAYLOAD_TYPES.includes(o.def.name)) {
      sink.add(o.node, o.path, ConfigMessages.builtinPayloadType(o.def.name));
    } else if (first && first.def !== o.def) {
      sink.add(o.node, o.path, ConfigMessages.duplicatePayloadType(o.def.name, first.source, o.source));
    } else if (!first) {
      byName.set(o.def.name, o);
    }
  }
  const known = [...byName.keys(), ...BUILTIN_PAYLOAD_TYPES];
  const suggestions = [...known, ...SCALARS];

  for (const d of drafts) {
    for (const f of d.fields) {
      const ref = refName(f.type);
      if (ref !== null && !known.includes(ref)) {
        const near = closest(ref, [...suggestions, ...Object.keys(SCALAR_ALIASES)]);
        const suggestion = SCALAR_ALIASES[ref.toLowerCase()] ?? (near !== null ? (SCALAR_ALIASES[near] ?? near) : null);
        sink.add(f.node, f.path, ConfigMessages.unknownFieldType(ref, suggestion));
      }
    }
  }
  for (const o of origins) {
    if (o.fromYaml) continue;
    for (const f of o.def.fields) {
      const ref = refName(f.type);
      if (ref !== null && !known.includes(ref)) {
        sink.add(o.node, o.path, ConfigMessages.exportedTypeUnknownRef(o.def.name, f.name, ref, o.source, closest(ref, known)));
      }
    }
  }

  // A required, non-list reference chain that returns to its start can never be satisfied.
  const requiredRefs = (name: string): string[] => (byName.get(name)?.def.fields ?? []).filter((f) => !f.optional && f.type.kind === 'ref').map((f) => refName(f.type) as string);
  for (const [name, origin] of byName) {
    const seen = new Set<string>();
    const stack = [...requiredRefs(name)];
    while (stack.length > 0) {
      const next = stack.pop() as string;
      if (next === name) {
        sink.add(origin.node, origin.path, ConfigMessages.recursivePayloadType(name));
        break;
      }
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...requiredRefs(next));
    }
  }
}
