// Public API of the config concern: load/check organism.yaml, the sanitized view, problems.
export { checkOrganism, checkOrganismReport, loadOrganism, loadOrganismFromString, loadOrganismToRun, type LoadOptions } from './load.js';
export { ConfigInvalidError, formatConfigProblem } from './errors.js';
export { sanitizeConfig } from './sanitize.js';
export { sanitizedConfigYaml } from './config-yaml.js';
export { parseHandlerRef, type HandlerRef } from './handlers.js';
export { BUILTIN_PAYLOAD_TYPES } from './payloads.js';
export { Defaults as ConfigDefaults, BUILTIN_LLM } from './schema.js';
export { providerServes } from './document.js';
export type * from './types.js';
