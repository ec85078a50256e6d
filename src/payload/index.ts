export * from './types.js';
export * from './define.js';
export * from './builtin.js';
export * from './payload-type.js';
export * from './registry.js';
export * from './inject.js';
export { escapeXml, unescapeXml } from './xml-text.js';
export { isXmlElement, parseXmlElement, textOf, type XmlElement, type XmlNode, type XmlParseResult, type XmlText } from './xml-tree.js';
