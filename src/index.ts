// Public runtime API. The runtime knows nothing of HTTP; the control service (src/service) sits on top.
export * from './errors/catalogue.js';
export * from './payload/index.js';
export * from './pump/message.js';
export * from './pump/handler.js';
export * from './pump/hooks.js';
export * from './usage/index.js';
export * from './llm/index.js';
export * from './config/types.js';
export * from './store/index.js';
export * from './config/index.js';
