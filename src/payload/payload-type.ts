import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { FieldDef, FieldError, FieldType, PayloadTypeDef, ValidationResult } from './types.js';
import { escapeXml, unescapeXml } from './xml-text.js';

export type DefResolver = (name: string) => PayloadTypeDef | undefined;

/** How lists are written in XML: `<tags><item>a</item><item>b</item></tags>`. */
export const LIST_ITEM_TAG = 'item';

const parser = new XMLParser({
  ignoreAttributes: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: false, // decoded by unescapeXml: the 5 standard entities and char refs only
  ignoreDeclaration: true,
  ignorePiTags: true,
  isArray: () => true, // every element may repeat: cardinality is checked against the type
});

type Node = string | { [tag: string]: Node[] | string };

/**
 * A compiled payload type: validation of JSON and XML payloads with a precise error per bad
 * field, XML serialization, an XSD, an example and a JSON Schema, all from one definition.
 */
export class PayloadType {
  constructor(
    readonly def: PayloadTypeDef,
    private readonly resolve: DefResolver,
  ) {}

  get name(): string {
    return this.def.name;
  }

  get description(): string | undefined {
    return this.def.description;
  }

  get fields(): readonly FieldDef[] {
    return this.def.fields;
  }

  // ------------------------------------------------------------ JSON

  validate(value: unknown): ValidationResult {
    const errors: FieldError[] = [];
    const out = this.checkObject(this.def, value, '', errors);
    return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out ?? {} };
  }

  private checkObject(def: PayloadTypeDef, value: unknown, path: string, errors: FieldError[]): Record<string, unknown> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push({ path, message: `expected an object (${def.name}), got ${describe(value)}` });
      return undefined;
    }
    const input = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    const known = new Set(def.fields.map((f) => f.name));
    for (const key of Object.keys(input)) {
      if (!known.has(key)) errors.push({ path: join(path, key), message: `unknown field (${def.name} has: ${[...known].join(', ') || 'no fields'})` });
    }
    for (const field of def.fields) {
      const v = input[field.name];
      const p = join(path, field.name);
      if (v === undefined || v === null) {
        if (!field.optional) errors.push({ path: p, message: 'required field missing' });
        continue;
      }
      const checked = this.checkValue(field.type, v, p, errors);
      if (checked !== undefined) out[field.name] = checked;
    }
    return out;
  }

  private checkValue(type: FieldType, v: unknown, path: string, errors: FieldError[]): unknown {
    switch (type.kind) {
      case 'string':
        if (typeof v === 'string') return v;
        break;
      case 'integer':
        if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
        break;
      case 'number':
        if (typeof v === 'number' && Number.isFinite(v)) return v;
        break;
      case 'boolean':
        if (typeof v === 'boolean') return v;
        break;
      case 'list': {
        if (!Array.isArray(v)) break;
        return v.map((item, i) => this.checkValue(type.of, item, `${path}[${i}]`, errors));
      }
      case 'ref': {
        const def = this.resolve(type.name);
        if (!def) {
          errors.push({ path, message: `unknown payload type ${type.name}` });
          return undefined;
        }
        return this.checkObject(def, v, path, errors);
      }
    }
    errors.push({ path, message: `expected ${typeName(type)}, got ${describe(v)}` });
    return undefined;
  }

  // ------------------------------------------------------------ XML

  /** Parses one XML element whose tag is this type's name into a validated payload. */
  fromXml(xml: string): ValidationResult {
    if (/<!DOCTYPE|<!ENTITY/i.test(xml)) return fail('', 'DOCTYPE and entity declarations are not allowed');
    const valid = XMLValidator.validate(xml);
    if (valid !== true) return fail('', `malformed XML at line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg}`);
    const doc = parser.parse(xml) as Record<string, Node[]>;
    const roots = Object.keys(doc).filter((k) => k !== '#text');
    if (roots.length !== 1 || (doc[roots[0]!] ?? []).length !== 1) {
      return fail('', `expected exactly one root element <${this.name}>, found ${roots.map((r) => `<${r}>`).join(', ') || 'none'}`);
    }
    if (roots[0] !== this.name) return fail('', `wrong root element <${roots[0]}>, expected <${this.name}>`);
    const errors: FieldError[] = [];
    const value = this.xmlObject(this.def, doc[roots[0]!]![0]!, '', errors);
    return errors.length > 0 ? { ok: false, errors } : { ok: true, value: value ?? {} };
  }

  private xmlObject(def: PayloadTypeDef, node: Node, path: string, errors: FieldError[]): Record<string, unknown> | undefined {
    const children: Record<string, Node[] | string> = typeof node === 'string' ? {} : node;
    if (typeof node === 'string' && node.trim() !== '') {
      errors.push({ path, message: `expected child elements of ${def.name}, got text` });
      return undefined;
    }
    const out: Record<string, unknown> = {};
    const known = new Set(def.fields.map((f) => f.name));
    for (const tag of Object.keys(children)) {
      if (tag !== '#text' && !known.has(tag)) errors.push({ path: join(path, tag), message: `unknown element <${tag}> in <${def.name}>` });
    }
    for (const field of def.fields) {
      const p = join(path, field.name);
      const occurrences = children[field.name];
      if (occurrences === undefined || typeof occurrences === 'string' || occurrences.length === 0) {
        if (!field.optional) errors.push({ path: p, message: 'required field missing' });
        continue;
      }
      if (occurrences.length > 1) {
        errors.push({ path: p, message: `<${field.name}> appears ${occurrences.length} times; expected once` });
        continue;
      }
      const v = this.xmlValue(field.type, occurrences[0]!, p, errors);
      if (v !== undefined) out[field.name] = v;
    }
    return out;
  }

  private xmlValue(type: FieldType, node: Node, path: string, errors: FieldError[]): unknown {
    if (type.kind === 'ref') {
      const def = this.resolve(type.name);
      if (!def) {
        errors.push({ path, message: `unknown payload type ${type.name}` });
        return undefined;
      }
      return this.xmlObject(def, node, path, errors);
    }
    if (type.kind === 'list') {
      if (typeof node === 'string') {
        if (node.trim() === '') return [];
        errors.push({ path, message: `expected <${LIST_ITEM_TAG}> elements, got text` });
        return undefined;
      }
      for (const tag of Object.keys(node)) {
        if (tag !== '#text' && tag !== LIST_ITEM_TAG) errors.push({ path: join(path, tag), message: `unexpected <${tag}> in a list; use <${LIST_ITEM_TAG}>` });
      }
      const items = node[LIST_ITEM_TAG];
      if (!Array.isArray(items)) return [];
      return items.map((item, i) => this.xmlValue(type.of, item, `${path}[${i}]`, errors));
    }
    if (typeof node !== 'string') {
      errors.push({ path, message: `expected ${type.kind} text, got child elements` });
      return undefined;
    }
    const text = unescapeXml(node);
    switch (type.kind) {
      case 'string':
        return text;
      case 'integer': {
        const t = text.trim();
        if (/^[+-]?\d+$/.test(t) && Number.isSafeInteger(Number(t))) return Number(t);
        break;
      }
      case 'number': {
        const t = text.trim();
        if (t !== '' && Number.isFinite(Number(t))) return Number(t);
        break;
      }
      case 'boolean': {
        const t = text.trim();
        if (t === 'true' || t === '1') return true;
        if (t === 'false' || t === '0') return false;
        break;
      }
    }
    errors.push({ path, message: `expected ${type.kind}, got ${JSON.stringify(text)}` });
    return undefined;
  }

  /** Serializes a (valid) payload; `fromXml(toXml(v))` gives `v` back. */
  toXml(value: Record<string, unknown>): string {
    return `<${this.name}>${this.xmlFields(this.def, value, '  ')}\n</${this.name}>`;
  }

  private xmlFields(def: PayloadTypeDef, value: Record<string, unknown>, indent: string): string {
    let out = '';
    for (const field of def.fields) {
      const v = value[field.name];
      if (v === undefined || v === null) continue;
      out += `\n${indent}<${field.name}>${this.xmlBody(field.type, v, indent)}</${field.name}>`;
    }
    return out;
  }

  private xmlBody(type: FieldType, v: unknown, indent: string): string {
    if (type.kind === 'list') {
      const items = Array.isArray(v) ? v : [];
      if (items.length === 0) return '';
      const inner = indent + '  ';
      return items.map((item) => `\n${inner}<${LIST_ITEM_TAG}>${this.xmlBody(type.of, item, inner)}</${LIST_ITEM_TAG}>`).join('') + `\n${indent}`;
    }
    if (type.kind === 'ref') {
      const def = this.resolve(type.name);
      if (!def || typeof v !== 'object' || v === null) return '';
      return `${this.xmlFields(def, v as Record<string, unknown>, indent + '  ')}\n${indent}`;
    }
    return escapeXml(String(v));
  }

  // ------------------------------------------------------------ schema documents

  /** An XSD 1.0 document describing the XML form of this type. */
  xsd(): string {
    const lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">'];
    lines.push(`  <xs:element name="${this.name}" type="${this.name}Type"/>`);
    for (const def of this.closure()) {
      lines.push(`  <xs:complexType name="${def.name}Type">`);
      if (def.description) lines.push(`    <xs:annotation><xs:documentation>${escapeXml(def.description)}</xs:documentation></xs:annotation>`);
      lines.push('    <xs:all>');
      for (const f of def.fields) {
        const min = f.optional ? ' minOccurs="0"' : '';
        const doc = f.description ? `<xs:annotation><xs:documentation>${escapeXml(f.description)}</xs:documentation></xs:annotation>` : '';
        if (f.type.kind === 'list') {
          lines.push(`      <xs:element name="${f.name}"${min}>${doc}<xs:complexType><xs:sequence>${xsdItem(f.type.of)}</xs:sequence></xs:complexType></xs:element>`);
        } else if (doc) {
          lines.push(`      <xs:element name="${f.name}" type="${xsdType(f.type)}"${min}>${doc}</xs:element>`);
        } else {
          lines.push(`      <xs:element name="${f.name}" type="${xsdType(f.type)}"${min}/>`);
        }
      }
      lines.push('    </xs:all>', '  </xs:complexType>');
    }
    lines.push('</xs:schema>');
    return lines.join('\n');
  }

  /** A plausible payload that validates. */
  exampleValue(): Record<string, unknown> {
    return this.exampleObject(this.def, new Set());
  }

  exampleXml(): string {
    return this.toXml(this.exampleValue());
  }

  private exampleObject(def: PayloadTypeDef, seen: Set<string>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const inside = new Set(seen).add(def.name);
    for (const f of def.fields) {
      const v = this.exampleOf(f.type, f.name, inside);
      if (v !== undefined) out[f.name] = v;
      else if (!f.optional) out[f.name] = {};
    }
    return out;
  }

  private exampleOf(type: FieldType, name: string, seen: Set<string>): unknown {
    switch (type.kind) {
      case 'string':
        return `example ${name}`;
      case 'integer':
        return 1;
      case 'number':
        return 1.5;
      case 'boolean':
        return true;
      case 'list': {
        const item = this.exampleOf(type.of, name, seen);
        return item === undefined ? [] : [item];
      }
      case 'ref': {
        const def = this.resolve(type.name);
        // An optional self-reference stops here, so examples of recursive types are finite.
        if (!def || seen.has(def.name)) return undefined;
        return this.exampleObject(def, seen);
      }
    }
  }

  /** JSON Schema (draft 2020-12) of the JSON form, nested types under `$defs`. */
  jsonSchema(): Record<string, unknown> {
    const defs: Record<string, unknown> = {};
    for (const def of this.closure()) if (def.name !== this.name) defs[def.name] = objectSchema(def, true);
    return {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: this.name,
      ...objectSchema(this.def, false),
      ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
    };
  }

  /** This type and every type it references, each once. */
  private closure(): PayloadTypeDef[] {
    const out: PayloadTypeDef[] = [];
    const visit = (def: PayloadTypeDef) => {
      if (out.some((d) => d.name === def.name)) return;
      out.push(def);
      for (const f of def.fields) {
        let t = f.type;
        while (t.kind === 'list') t = t.of;
        if (t.kind === 'ref') {
          const d = this.resolve(t.name);
          if (d) visit(d);
        }
      }
    };
    visit(this.def);
    return out;
  }
}

function objectSchema(def: PayloadTypeDef, nested: boolean): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const f of def.fields) properties[f.name] = { ...jsonType(f.type), ...(f.description ? { description: f.description } : {}) };
  return {
    ...(nested ? { title: def.name } : {}),
    type: 'object',
    ...(def.description ? { description: def.description } : {}),
    properties,
    required: def.fields.filter((f) => !f.optional).map((f) => f.name),
    additionalProperties: false,
  };
}

function jsonType(type: FieldType): Record<string, unknown> {
  switch (type.kind) {
    case 'list':
      return { type: 'array', items: jsonType(type.of) };
    case 'ref':
      return { $ref: `#/$defs/${type.name}` };
    default:
      return { type: type.kind };
  }
}

function xsdType(type: FieldType): string {
  switch (type.kind) {
    case 'string':
      return 'xs:string';
    case 'integer':
      return 'xs:integer';
    case 'number':
      return 'xs:double';
    case 'boolean':
      return 'xs:boolean';
    case 'ref':
      return `${type.name}Type`;
    case 'list':
      return 'xs:anyType';
  }
}

function xsdItem(type: FieldType): string {
  if (type.kind === 'list') {
    return `<xs:element name="${LIST_ITEM_TAG}" minOccurs="0" maxOccurs="unbounded"><xs:complexType><xs:sequence>${xsdItem(type.of)}</xs:sequence></xs:complexType></xs:element>`;
  }
  return `<xs:element name="${LIST_ITEM_TAG}" type="${xsdType(type)}" minOccurs="0" maxOccurs="unbounded"/>`;
}

export function typeName(type: FieldType): string {
  switch (type.kind) {
    case 'list':
      return `list of ${typeName(type.of)}`;
    case 'ref':
      return `object (${type.name})`;
    default:
      return type.kind;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer ${v}` : `number ${v}`;
  if (typeof v === 'object') return 'object';
  return `${typeof v} ${String(v)}`;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function fail(path: string, message: string): ValidationResult {
  return { ok: false, errors: [{ path, message }] };
}
