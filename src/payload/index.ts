export * from './types.js';
export * from './define.js';
export * from './builtin.js';
export * from './payload-type.js';
export * from './registry.js';
export * from './inject.js';
export { escapeXml, unescapeXml } from './xml-text.js';
