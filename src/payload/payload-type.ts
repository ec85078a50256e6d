import type { FieldDef, FieldError, FieldType, PayloadTypeDef, ScalarKind, ValidationResult } from './types.js';
import { escapeXml } from './xml-text.js';
import { clip, isXmlElement, parseXmlElement, textOf, type XmlElement } from './xml-tree.js';

/** Finds a payload type by name (for fields that refer to another type). */
export type DefResolver = (name: string) => PayloadTypeDef | undefined;

/** How lists are written in XML: `<tags><item>a</item><item>b</item></tags>`. */
export const LIST_ITEM_TAG = 'item';

/**
 * A compiled payload type: validation of JSON and XML payloads with a precise error per bad
 * field, XML serialization, an XSD, an example and a JSON Schema, all from one definition.
 */
export class PayloadType {
  // Generated documents are computed once: the registry recompiles types when it changes.
  private cachedXsd: string | undefined;
  private cachedJsonSchema: Record<string, unknown> | undefined;
  private cachedExample: Record<string, unknown> | undefined;

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
      // Own properties only: a field named `constructor` must not find Object.prototype's.
      const v = Object.hasOwn(input, field.name) ? input[field.name] : undefined;
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
        if (typeof v === 'number' && Number.isInteger(v)) {
          errors.push({ path, message: outOfRange(v) });
          return undefined;
        }
        break;
      case 'number':
        if (typeof v === 'number' && Number.isFinite(v)) return v;
        break;
      case 'boolean':
        if (typeof v === 'boolean') return v;
        break;
      case 'list': {
        if (!Array.isArray(v)) break;
        // A list item cannot be absent, so null is reported like any other wrong value.
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

  /**
   * Parses a string that is exactly one XML element, whose tag is this type's name, into a
   * validated payload. Text is coerced to the field types; lists are written as one `<item>`
   * child per entry; nested types as child elements. Every bad field is reported.
   */
  fromXml(xml: string): ValidationResult {
    const parsed = parseXmlElement(xml);
    if (!parsed.ok) return fail('', parsed.message);
    return this.fromElement(parsed.element);
  }

  /** Validates an element already taken out of a larger document (see `parseXmlElement`). */
  fromElement(element: XmlElement): ValidationResult {
    if (element.name !== this.name) return fail('', `wrong root element <${element.name}>, expected <${this.name}>`);
    const errors: FieldError[] = [];
    const value = this.xmlObject(this.def, element, '', errors);
    return errors.length > 0 ? { ok: false, errors } : { ok: true, value: value ?? {} };
  }

  private xmlObject(def: PayloadTypeDef, element: XmlElement, path: string, errors: FieldError[]): Record<string, unknown> | undefined {
    const byName = new Map<string, XmlElement[]>();
    const known = new Set(def.fields.map((f) => f.name));
    for (const child of element.children) {
      if (!isXmlElement(child)) {
        if (child.text.trim() !== '')
          errors.push({ path, message: `unexpected text ${JSON.stringify(clip(child.text.trim()))} in <${element.name}>; expected child elements of ${def.name}` });
        continue;
      }
      if (!known.has(child.name)) {
        errors.push({ path: join(path, child.name), message: `unknown element <${child.name}> in <${element.name}> (${def.name} has: ${[...known].join(', ') || 'no fields'})` });
        continue;
      }
      const list = byName.get(child.name);
      if (list) list.push(child);
      else byName.set(child.name, [child]);
    }
    const out: Record<string, unknown> = {};
    for (const field of def.fields) {
      const p = join(path, field.name);
      const occurrences = byName.get(field.name) ?? [];
      if (occurrences.length > 1) {
        errors.push({ path: p, message: `<${field.name}> appears ${occurrences.length} times; expected once` });
        continue;
      }
      const el = occurrences[0];
      // An empty optional scalar that is not a string (`<zip/>` for an optional integer) means "absent".
      if (el === undefined || (field.optional && isScalarKind(field.type) && field.type.kind !== 'string' && isBlank(el))) {
        if (!field.optional) errors.push({ path: p, message: 'required field missing' });
        continue;
      }
      const v = this.xmlValue(field.type, el, p, errors);
      if (v !== undefined) out[field.name] = v;
    }
    return out;
  }

  private xmlValue(type: FieldType, el: XmlElement, path: string, errors: FieldError[]): unknown {
    if (type.kind === 'ref') {
      const def = this.resolve(type.name);
      if (!def) {
        errors.push({ path, message: `unknown payload type ${type.name}` });
        return undefined;
      }
      return this.xmlObject(def, el, path, errors);
    }
    if (type.kind === 'list') {
      const out: unknown[] = [];
      let ok = true;
      for (const child of el.children) {
        if (!isXmlElement(child)) {
          if (child.text.trim() !== '') {
            errors.push({ path, message: `unexpected text ${JSON.stringify(clip(child.text.trim()))} in a list; write each entry as <${LIST_ITEM_TAG}>...</${LIST_ITEM_TAG}>` });
            ok = false;
          }
          continue;
        }
        if (child.name !== LIST_ITEM_TAG) {
          errors.push({ path: `${path}[${out.length}]`, message: `unexpected <${child.name}> in a list; write each entry as <${LIST_ITEM_TAG}>...</${LIST_ITEM_TAG}>` });
          ok = false;
          continue;
        }
        out.push(this.xmlValue(type.of, child, `${path}[${out.length}]`, errors));
      }
      return ok ? out : undefined;
    }
    const nested = el.children.find(isXmlElement);
    if (nested) {
      errors.push({ path, message: `expected ${type.kind} text, got element <${nested.name}>` });
      return undefined;
    }
    const text = textOf(el);
    if (type.kind === 'string') return text;
    const coerced = coerceScalar(type.kind, text.trim());
    if (coerced.ok) return coerced.value;
    errors.push({ path, message: coerced.message ?? `expected ${type.kind}, got ${JSON.stringify(clip(text))}` });
    return undefined;
  }

  /** Serializes a (valid) payload; `fromXml(toXml(v))` gives `v` back. */
  toXml(value: Record<string, unknown>): string {
    return `<${this.name}>${this.xmlFields(this.def, value, '  ')}\n</${this.name}>`;
  }

  private xmlFields(def: PayloadTypeDef, value: Record<string, unknown>, indent: string): string {
    let out = '';
    for (const field of def.fields) {
      const v = Object.hasOwn(value, field.name) ? value[field.name] : undefined;
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

  /**
   * An XSD 1.0 document describing the XML form of this type: one complexType per type (the
   * root and every nested type), fields in any order (xs:all), optional fields minOccurs="0",
   * lists as one `<item>` element per entry.
   */
  xsd(): string {
    this.cachedXsd ??= this.buildXsd();
    return this.cachedXsd;
  }

  private buildXsd(): string {
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
          const listDoc = `<xs:annotation><xs:documentation>${escapeXml(`${f.description ? `${f.description}. ` : ''}A list: one <${LIST_ITEM_TAG}> element per entry.`)}</xs:documentation></xs:annotation>`;
          lines.push(`      <xs:element name="${f.name}"${min}>${listDoc}<xs:complexType><xs:sequence>${xsdItem(f.type.of)}</xs:sequence></xs:complexType></xs:element>`);
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

  /** A plausible payload that validates (values chosen from field names and descriptions). */
  exampleValue(): Record<string, unknown> {
    this.cachedExample ??= this.exampleObject(this.def, new Set(), false) ?? this.exampleObject(this.def, new Set(), true) ?? {};
    return structuredClone(this.cachedExample);
  }

  exampleXml(): string {
    return this.toXml(this.exampleValue());
  }

  /**
   * An example object, or undefined when a required field can only be filled by re-entering a
   * type already on the path (a recursion that must stop). Optional fields and lists absorb
   * such recursion (left out / empty); `lenient` fills an impossible required field with `{}`
   * so that even a type with a required cycle (reported by the registry) gets a finite example.
   */
  private exampleObject(def: PayloadTypeDef, seen: ReadonlySet<string>, lenient: boolean): Record<string, unknown> | undefined {
    const out: Record<string, unknown> = {};
    const inside = new Set(seen).add(def.name);
    for (const f of def.fields) {
      const v = this.exampleOf(f.type, f.name, inside, lenient, f.description);
      if (v !== undefined) out[f.name] = v;
      else if (f.optional) continue;
      else if (lenient) out[f.name] = {};
      else return undefined;
    }
    return out;
  }

  private exampleOf(type: FieldType, name: string, seen: ReadonlySet<string>, lenient: boolean, description?: string): unknown {
    switch (type.kind) {
      case 'string':
      case 'integer':
      case 'number':
      case 'boolean':
        return exampleScalar(type.kind, name, description);
      case 'list': {
        const item = this.exampleOf(type.of, name, seen, false, description);
        return item === undefined ? [] : [item];
      }
      case 'ref': {
        const def = this.resolve(type.name);
        if (!def || seen.has(def.name)) return undefined;
        return this.exampleObject(def, seen, lenient);
      }
    }
  }

  /** JSON Schema (draft 2020-12) of the JSON form, nested types under `$defs`. */
  jsonSchema(): Record<string, unknown> {
    this.cachedJsonSchema ??= this.buildJsonSchema();
    return structuredClone(this.cachedJsonSchema);
  }

  private buildJsonSchema(): Record<string, unknown> {
    const defs: Record<string, unknown> = {};
    for (const def of this.closure()) if (def.name !== this.name) defs[def.name] = objectSchema(def, true, this.name);
    return {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: this.name,
      ...objectSchema(this.def, false, this.name),
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

function objectSchema(def: PayloadTypeDef, nested: boolean, root: string): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const f of def.fields) {
    const schema = jsonType(f.type, root);
    properties[f.name] = { ...(f.optional ? orNull(schema) : schema), ...(f.description ? { description: f.description } : {}) };
  }
  return {
    ...(nested ? { title: def.name } : {}),
    type: 'object',
    ...(def.description ? { description: def.description } : {}),
    properties,
    required: def.fields.filter((f) => !f.optional).map((f) => f.name),
    additionalProperties: false,
  };
}

/** validate() reads null in an optional field as "absent"; the schema says the same. */
function orNull(schema: Record<string, unknown>): Record<string, unknown> {
  return typeof schema['type'] === 'string' ? { ...schema, type: [schema['type'], 'null'] } : { anyOf: [schema, { type: 'null' }] };
}

function jsonType(type: FieldType, root: string): Record<string, unknown> {
  switch (type.kind) {
    case 'list':
      return { type: 'array', items: jsonType(type.of, root) };
    case 'ref':
      // The root type is the document itself, not one of its $defs (recursive types).
      return { $ref: type.name === root ? '#' : `#/$defs/${type.name}` };
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
  if (v === null || v === undefined) return String(v);
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer ${v}` : `number ${v}`;
  if (typeof v === 'object') return 'object';
  return `${typeof v} ${String(v)}`;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/**
 * A plausible value for a scalar field. Choices listed in the description win
 * (`warning (75 %), critical (90 %) or final (95 %)` -> `warning`); then hints in the name.
 */
function exampleScalar(kind: ScalarKind, name: string, description?: string): unknown {
  const n = name.toLowerCase();
  switch (kind) {
    case 'boolean':
      return true;
    case 'integer':
      if (/percent/.test(n)) return 80;
      if (/year/.test(n)) return 2024;
      if (/age$/.test(n)) return 42;
      if (/max|limit|total|tokens/.test(n)) return 1000;
      return /count|num|qty|quantity|size|length/.test(n) ? 3 : 1;
    case 'number':
      if (/percent/.test(n)) return 75.5;
      if (/price|amount|cost|total|usd/.test(n)) return 19.99;
      if (/lat/.test(n)) return 48.8566;
      if (/lon|lng/.test(n)) return 2.3522;
      return 1.5;
    case 'string': {
      const choice = description ? firstChoice(description) : null;
      if (choice) return choice;
      if (/e-?mail/.test(n)) return 'ada@example.com';
      if (/url|link|href|website|homepage/.test(n)) return 'https://example.com';
      if (/date$/.test(n)) return '2024-05-01';
      if (/time|_at$|At$/.test(name)) return '2024-05-01T12:00:00Z';
      if (/(^|_)id$|Id$/.test(name)) return 'abc-123';
      if (/city/.test(n)) return 'Paris';
      if (/country/.test(n)) return 'France';
      if (/lang/.test(n)) return 'en';
      if (/name$/.test(n)) return 'Ada';
      if (/message|text|body|content|question|answer|query|prompt|summary|reason|error/.test(n)) return `A short ${name}`;
      return `example ${name}`;
    }
  }
}

/** The first of the values a description enumerates (`a|b|c`, `(a, b, ...)`, `a (..), b (..) or c`). */
function firstChoice(description: string): string | null {
  const piped = /\b([A-Za-z_][\w-]*)\s*\|\s*[A-Za-z_]/.exec(description);
  if (piped) return piped[1]!;
  const listed = /\(([a-z_][\w-]*)\s*,/.exec(description);
  if (listed) return listed[1]!;
  const leading = /^\s*([a-z_][\w-]*)\s*\([^)]*\)\s*,/.exec(description);
  return leading ? leading[1]! : null;
}

function isScalarKind(type: FieldType): type is { kind: ScalarKind } {
  return type.kind === 'string' || type.kind === 'integer' || type.kind === 'number' || type.kind === 'boolean';
}

function isBlank(el: XmlElement): boolean {
  return !el.children.some(isXmlElement) && textOf(el).trim() === '';
}

// Decimal notation only (`0x10`, `Infinity` and `1_000` are refused), as xs:double writes it.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Text of an XML element (already trimmed) as a non-string scalar. */
function coerceScalar(kind: Exclude<ScalarKind, 'string'>, t: string): { ok: true; value: unknown } | { ok: false; message?: string } {
  switch (kind) {
    case 'integer': {
      if (!/^[+-]?\d+$/.test(t)) return { ok: false };
      const n = Number(t);
      return Number.isSafeInteger(n) ? { ok: true, value: n === 0 ? 0 : n } : { ok: false, message: outOfRange(n) };
    }
    case 'number': {
      const n = Number(t);
      return DECIMAL.test(t) && Number.isFinite(n) ? { ok: true, value: n === 0 ? 0 : n } : { ok: false };
    }
    case 'boolean':
      if (t === 'true' || t === '1') return { ok: true, value: true };
      if (t === 'false' || t === '0') return { ok: true, value: false };
      return { ok: false };
  }
}

function outOfRange(n: number): string {
  return `expected integer, got integer ${n} (outside the safe range -${Number.MAX_SAFE_INTEGER}..${Number.MAX_SAFE_INTEGER})`;
}

function fail(path: string, message: string): ValidationResult {
  return { ok: false, errors: [{ path, message }] };
}
