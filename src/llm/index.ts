export * from './types.js';
export * from './http-error.js';
export * from './retry.js';
export * from './router.js';
export * from './providers/index.js';
export * from './tokens.js';
