import Ajv2020 from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import { unionMember, unionParameters, unionXsd } from '../../src/payload/union.js';

const Person = definePayload('Person', { name: 'string' });
// Refers to itself (`$ref: "#"` in its own schema) and to Person, which Memo refers to as well.
const Folder = definePayload('Folder', { title: 'string', owner: 'Person', children: 'Folder[]' });
const Memo = definePayload('Memo', { text: 'string', author: 'Person' });
const registry = new PayloadRegistry([Person, Folder, Memo]);
const types = [registry.get('Folder')!, registry.get('Memo')!];

describe('the schemas of a listener of several payload types', () => {
  it('tool parameters: one key naming the type; nested and self references still resolve (checked by ajv)', () => {
    const schema = unionParameters(types);
    expect(schema).toMatchObject({ type: 'object', minProperties: 1, maxProperties: 1, additionalProperties: false });
    const validate = new Ajv2020.default({ strict: false, allowUnionTypes: true }).compile(schema);
    const folder = { title: 'root', owner: { name: 'Ada' }, children: [{ title: 'sub', owner: { name: 'Bo' }, children: [] }] };
    expect(validate({ Folder: folder })).toBe(true);
    expect(validate({ Memo: { text: 'hi', author: { name: 'Ada' } } })).toBe(true);
    expect(validate({ Folder: { ...folder, children: [{ title: 'sub', owner: { name: 'Bo' }, children: 5 }] } })).toBe(false);
    expect(validate({ Folder: folder, Memo: { text: 'hi', author: { name: 'Ada' } } })).toBe(false);
    expect(validate({ title: 'bare' })).toBe(false);
  });

  it('unionMember names the type of a keyed value, or says why not', () => {
    expect(unionMember(types, { Memo: { text: 'x' } })).toMatchObject({ type: { name: 'Memo' }, payload: { text: 'x' } });
    expect(unionMember(types, { text: 'x' })).toEqual({ error: 'text is not one of the accepted payload types (Folder, Memo)' });
    expect(unionMember(types, {})).toEqual({ error: 'expected one key naming the payload type (one of Folder, Memo), got none' });
  });

  it('one XSD: a root element per type, each complexType once', () => {
    const xsd = unionXsd(types);
    expect(xsd).toContain('<xs:element name="Folder" type="FolderType"/>');
    expect(xsd).toContain('<xs:element name="Memo" type="MemoType"/>');
    expect(xsd.match(/<xs:complexType name="PersonType">/g)).toHaveLength(1);
    expect(xsd.trim().endsWith('</xs:schema>')).toBe(true);
  });
});
