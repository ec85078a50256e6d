/**
 * Every problem text the config validator reports, declared once. Operators read these in
 * `organism check` and in failed reloads; tests assert them verbatim.
 */
const quote = (s: string): string => `\`${s}\``;
/** ` (of listeners `a`, `b` and `c`)` for a module several listeners use; nothing for one. */
const usedBy = (users: readonly string[]): string => (users.length < 2 ? '' : ` (of listeners ${users.slice(0, -1).map(quote).join(', ')} and ${quote(users[users.length - 1]!)})`);
const didYouMean = (suggestion: string | null): string => (suggestion ? `; did you mean ${quote(suggestion)}?` : '');

export const ConfigMessages = {
  cannotRead: (reason: string) => `cannot read the config file: ${reason}; check the path (default: ./organism.yaml) and its permissions`,
  fileTooLarge: (size: number | null, max: number, env: string) =>
    `the config file is ${size === null ? 'larger than the limit' : `${size.toLocaleString('en-US')} bytes, over the limit`} of ${max.toLocaleString('en-US')} bytes${max === 1024 * 1024 ? ' (1 MiB)' : ''}: an organism.yaml is a few KB, so check that this is the right file (${env} raises the limit)`,
  badMaxConfigBytes: (env: string, value: string) => `${env} must be a number of bytes in decimal digits (e.g. 2097152), not ${JSON.stringify(value)}`,
  yamlAlias: (alias: string, more: number) =>
    `YAML aliases are not supported: \`${alias}\` here; write the value out${more > 0 ? ` (and ${more} more alias${more === 1 ? '' : 'es'} in this file)` : ''} (aliases can make a small file expand without bound)`,
  yamlSyntax: (reason: string, hint: string, others: number) =>
    `YAML syntax error: ${reason}; ${hint}${others > 0 ? ` (${others} more error${others === 1 ? '' : 's'} after this one, probably caused by it)` : ''}`,
  yamlIndentHint: (lineText: string) =>
    `check the indentation of ${lineText ? quote(lineText) : 'this line'}: keys of one mapping start in the same column, list items with \`- \`, indented with spaces`,
  yamlDeeperIndent: (lineText: string, previousLine: number) =>
    `YAML syntax error: ${quote(lineText)} is indented deeper than the key on line ${previousLine}, which already has a value; indent it like that key (or give that key no value to nest under it)`,
  topLevelNotMapping: () => 'expected a mapping of keys at the top level of the file; start from `organism init` or write `organism: {name: ...}` and `listeners:` at column 1',

  unknownKey: (key: string, suggestion: string | null, valid: readonly string[]) =>
    suggestion ? `unknown key ${quote(key)}${didYouMean(suggestion)}` : `unknown key ${quote(key)}; valid keys: ${valid.join(', ')}`,
  missingKey: (key: string) => `missing required key ${quote(key)}; add \`${key}: ...\` here`,
  wrongType: (expected: string, got: string) => `expected ${expected}, got ${got}`,
  badEnum: (allowed: readonly string[], got: string, suggestion: string | null) => `expected one of ${allowed.join(', ')}, got ${got}${didYouMean(suggestion)}`,
  badUrl: (got: string) => `expected an http:// or https:// URL, got ${got}`,

  invalidName: (what: string, name: string) => `invalid ${what} name ${quote(name)}: use letters, digits, \`_\`, \`-\` and \`.\`, starting with a letter or \`_\``,
  invalidFieldName: (name: string) => `invalid field name ${quote(name)}: use letters, digits, \`_\` and \`-\`, starting with a letter or \`_\``,
  reservedSystemName: (name: string) => `listener name ${quote(name)} is reserved: names starting with \`system.\` belong to built-in listeners; choose another name`,
  duplicateName: (what: string, name: string, firstLine: number | null) =>
    `duplicate ${what} name ${quote(name)}${firstLine === null ? '' : ` (first declared at line ${firstLine})`}; rename one of them`,

  unknownPeer: (peer: string, suggestion: string | null, names: readonly string[]) =>
    `unknown peer ${quote(peer)}: no listener has that name${
      suggestion ? didYouMean(suggestion) : names.length > 0 ? `; the other listeners: ${names.join(', ')}` : `; declare a listener named ${quote(peer)} or remove it from \`peers\``
    }`,
  selfPeer: (name: string) => `listener ${quote(name)} lists itself as a peer; remove it from \`peers\` (a listener may always reply to its sender)`,
  retryMaxBelowInitial: (initial: number, max: number) => `\`retry.max_seconds\` (${max}) is less than \`retry.initial_seconds\` (${initial})`,
  onErrorSelf: (name: string) => `\`on_error\` names the listener itself (${quote(name)}): its own failures would be routed back to it; name another listener`,
  onErrorUnknown: (name: string, suggestion: string | null) => `\`on_error\`: no listener is named ${quote(name)}${didYouMean(suggestion)}`,
  onErrorNotPeer: (target: string, name: string) =>
    `\`on_error\` target ${quote(target)} is not a peer of ${quote(name)}: add it to \`peers\` (the final failure is routed to it like a message ${quote(name)} sends)`,
  onErrorNotAccepting: (target: string) => `\`on_error\` target ${quote(target)} does not accept SystemError: add it to its \`payload\` (e.g. \`payload: [Order, SystemError]\`)`,
  scheduleNeedsOneTime: () => 'a schedule needs exactly one of `cron` (with `timezone`) and `every` (`30s`, `5m`, `1h`)',
  badCron: (reason: string) => `invalid cron expression: ${reason}`,
  timezoneWithoutCron: () => '`timezone` applies to `cron` schedules only; remove it (an `every` interval counts from the Unix epoch)',
  badInterval: (got: string) => `\`every\` must be a whole number of seconds, minutes, hours or days (\`30s\`, \`5m\`, \`1h\`, \`1d\`) of at least 1s, got ${JSON.stringify(got)}`,
  schedulePayloadShape: () => "`payload` must be a mapping of the payload's fields (with `type` when the listener accepts several types)",
  schedulePayloadInvalid: (to: string, what: string) => `\`payload\` does not fit listener ${quote(to)}: ${what}`,
  scheduleUnknownTarget: (to: string, suggestion: string | null) => `\`to\`: no listener is named ${quote(to)}${didYouMean(suggestion)}`,
  unknownWebhookEvent: (got: string, suggestion: string | null, known: readonly string[]) =>
    `unknown webhook event ${quote(got)}${suggestion ? didYouMean(suggestion) : ''}; known events: ${known.join(', ')}`,
  webhookNoEvents: (known: readonly string[]) => `\`events\` lists no event; name at least one of: ${known.join(', ')}`,
  duplicatePeer: (peer: string) => `peer ${quote(peer)} is listed more than once; remove the repetition`,

  malformedHandler: (ref: string) => `malformed handler ${quote(ref)}: expected \`./path/to/module.ts#exportName\` (relative to the config file) or \`builtin:llm\``,
  handlerExtension: (ref: string) => `handler module in ${quote(ref)} must be a .ts or .js file`,
  unknownBuiltin: (ref: string) => `unknown built-in handler ${quote(ref)}; use \`builtin:llm\` or \`builtin:human\``,
  badA2aHandler: (ref: string) =>
    `malformed remote agent handler ${quote(ref)}: expected \`a2a:https://host/path\` (an http or https URL without credentials; put the token in \`token_env\`)`,
  remoteOnlyKey: (key: string) => `\`${key}\` applies to \`handler: a2a:<url>\` listeners only (a remote A2A agent); remove it`,
  remoteNotAgentKey: (key: string) => `\`${key}\` does not apply to a \`handler: a2a:<url>\` listener (a remote A2A agent answers it); remove it`,
  publicCardWithoutA2a: () => '`expose.a2a_public_card` applies to a listener served over A2A (there is no agent card otherwise); set `expose.a2a: true` or remove it',
  onTimeoutNotHuman: () => '`on_timeout` applies to `handler: builtin:human` listeners only; remove it',
  onTimeoutWithoutTimeout: () => '`on_timeout` needs `timeout_seconds` on a `builtin:human` listener (an ask waits for ever without one); set `timeout_seconds` or remove `on_timeout`',
  onTimeoutShape: () => '`on_timeout` must be `fail` or `{reply: {...payload}}` (the answer given when nobody answers in time)',
  humanNotAgentKey: (key: string) => `\`${key}\` does not apply to a \`builtin:human\` listener (people answer it); remove it`,
  /** `users`: the listeners whose `handler` names the module, when more than one (the problem is reported once, at the first). */
  moduleNotFound: (modulePath: string, resolved: string, users: readonly string[] = []) =>
    `handler module ${quote(modulePath)}${usedBy(users)} not found (looked for ${resolved}); fix the path, which is relative to the config file`,
  moduleFailed: (modulePath: string, reason: string, users: readonly string[] = []) => `handler module ${quote(modulePath)}${usedBy(users)} failed to load: ${reason}`,
  exportNotFound: (modulePath: string, exportName: string, suggestion: string | null, functions: readonly string[]) =>
    `handler module ${quote(modulePath)} has no export ${quote(exportName)}${
      suggestion
        ? didYouMean(suggestion)
        : functions.length > 0
          ? `; export it, or name one of its function exports: ${functions.join(', ')}`
          : '; export it (the module exports no function)'
    }`,
  exportNotFunction: (modulePath: string, exportName: string, got: string) =>
    `export ${quote(exportName)} of ${quote(modulePath)} is not a function (got ${got}); export a handler \`(payload, ctx) => ...\` under that name or name another export`,

  handlerForOtherListener: (modulePath: string, exportName: string, declaredFor: string, listener: string) =>
    `export ${quote(exportName)} of ${quote(modulePath)} is declared for listener ${quote(declaredFor)} (defineHandler('${declaredFor}', ...)), so it is typed for that listener's payload and peers, not this one's; write defineHandler('${listener}', ...) or name the right export`,

  approvalOnlyForLlm: () => '`approval` is only valid for `builtin:llm` listeners (it names tools whose calls wait for a person); remove it',
  approvalNeedsToolCalls: (agent: string) =>
    `agent ${quote(agent)} has \`approval\` but answers with \`reply_format: xml\`, where no tool calls are made; use \`reply_format: tools\` (the default) or remove \`approval\``,
  unknownApprovalTool: (agent: string, name: string, suggestion: string | null, known: readonly string[]) =>
    `approval names ${quote(name)}, which is not a tool of agent ${quote(agent)}${suggestion ? didYouMean(suggestion) : `; its tools: ${known.join(', ') || 'none'}`}`,
  toolsOnlyForLlm: () => '`tools` is only valid for `builtin:llm` listeners (a code handler calls its functions itself); remove it',
  toolsNeedToolCalls: (agent: string) =>
    `agent ${quote(agent)} has \`tools\` but answers with \`reply_format: xml\`, where no tools are offered; use \`reply_format: tools\` (the default) or remove \`tools\``,
  malformedTool: (use: string) => `malformed tool ${quote(use)}: expected \`./path/to/module.ts#exportName\` (relative to the config file)`,
  invalidToolName: (agent: string, name: string) =>
    `tool name ${quote(name)} of agent ${quote(agent)} is not a valid tool name: use 1 to 64 letters, digits, \`_\` and \`-\` (set \`name\` to rename it)`,
  toolNameReserved: (agent: string, name: string) =>
    `tool ${quote(name)} of agent ${quote(agent)} collides with the agent's own tools (\`reply\` and \`send_to_<peer>\` send its messages); give it another \`name\``,
  toolNameIsMcpTool: (agent: string, name: string, server: string, tool: string) =>
    `tool ${quote(name)} of agent ${quote(agent)} collides with tool ${quote(tool)} of MCP server ${quote(server)}, which the agent is offered as ${quote(name)}; give it another \`name\``,
  toolNameMayBeMcpTool: (agent: string, name: string, server: string) =>
    `tool ${quote(name)} of agent ${quote(agent)} starts with ${quote(`${server}_`)}, the prefix of the tools of MCP server ${quote(server)} (which lists no \`tools\`, so any of its tools may take that name); give it another \`name\` or list the server's \`tools\``,
  duplicateToolName: (agent: string, name: string) => `agent ${quote(agent)} has two tools named ${quote(name)}; give one of them another \`name\``,
  badPattern: (source: string, reason: string) => `invalid regular expression ${JSON.stringify(source)}: ${reason} (patterns are JavaScript regular expressions)`,
  malformedModuleRef: (what: string, ref: string) => `malformed ${what} ${quote(ref)}: expected \`./path/to/module.ts#exportName\` (relative to the config file)`,
  unknownDetector: (name: string, suggestion: string | null) =>
    `unknown detector ${quote(name)}${suggestion ? didYouMean(suggestion) : ''}; built-in detectors: email, phone, card, iban, api_key (or \`{pattern: '<regex>'}\`, or \`./module.ts#function\`)`,
  guardKind: (found: readonly string[]) =>
    found.length === 0
      ? 'a guard needs one of `use` (a `defineGuard` export), `max_input_bytes`, `forbidden` or `pii`'
      : `a guard has one kind; this one has ${found.map(quote).join(' and ')}: write one guard per list item`,
  guardNameOnlyForUse: () => '`name` applies to `use:` guards only (built-in guards are named by their kind); remove it',
  emptyForbidden: () => '`forbidden` lists no pattern; give at least one regular expression',
  redactEntryKind: () => 'a `privacy.redact` mapping has either `pattern` (a regular expression) or `use` (`./module.ts#function`)',
  guardModuleNotFound: (what: string, modulePath: string, resolved: string) =>
    `${what} module ${quote(modulePath)} not found (looked for ${resolved}); fix the path, which is relative to the config file`,
  guardModuleFailed: (what: string, modulePath: string, reason: string) => `${what} module ${quote(modulePath)} failed to load: ${reason}`,
  guardExportNotFound: (what: string, modulePath: string, exportName: string, suggestion: string | null, candidates: readonly string[]) =>
    `${what} ${quote(exportName)}: module ${quote(modulePath)} has no export ${quote(exportName)}${suggestion ? didYouMean(suggestion) : candidates.length > 0 ? `; its exports: ${candidates.join(', ')}` : ''}`,
  notAGuard: (use: string, got: string) => `${quote(use)} is ${got}, not a guard: declare it with \`defineGuard({input, output})\` from \`organism\``,
  notARedactFunction: (use: string, got: string) => `${quote(use)} is ${got}, not a function: a redaction function takes text and returns it with what it finds replaced`,
  toolModuleNotFound: (agent: string, modulePath: string, resolved: string) =>
    `tool module ${quote(modulePath)} of agent ${quote(agent)} not found (looked for ${resolved}); fix the path, which is relative to the config file`,
  toolModuleFailed: (agent: string, modulePath: string, reason: string) => `tool module ${quote(modulePath)} of agent ${quote(agent)} failed to load: ${reason}`,
  toolExportNotFound: (agent: string, modulePath: string, exportName: string, suggestion: string | null, candidates: readonly string[]) =>
    `tool ${quote(exportName)} of agent ${quote(agent)}: module ${quote(modulePath)} has no export ${quote(exportName)}${
      suggestion ? didYouMean(suggestion) : candidates.length > 0 ? `; its function and tool exports: ${candidates.join(', ')}` : '; export it (the module exports no function)'
    }`,
  toolNotFunction: (agent: string, use: string, got: string) =>
    `tool ${quote(use)} of agent ${quote(agent)} is not a function or a \`defineTool\` tool (got ${got}); export \`async (input, ctx) => ...\` or \`defineTool({description, input, run})\``,
  toolNeedsInput: (agent: string, use: string) =>
    `tool ${quote(use)} of agent ${quote(agent)} is a plain function, so its input type must be given: write \`{use: ${use}, input: <payload type>}\`, or export it made with \`defineTool({description, input, run})\``,
  toolHasInput: (agent: string, use: string) => `tool ${quote(use)} of agent ${quote(agent)} is made with \`defineTool\`, which carries its input type; remove \`input\` here`,

  llmNeedsPrompt: () => "a `builtin:llm` listener needs a `prompt`; add `prompt:` with the agent's instructions",
  llmNeedsModel: () => 'a `builtin:llm` listener needs a `model` when `llm.providers` are declared; add `model:` naming a model a provider serves',
  modelNotServed: (model: string, providers: readonly string[]) =>
    `no provider serves model ${quote(model)} (providers: ${providers.join(', ')}); add it to a provider's \`models\` or use a model one serves`,
  scriptOnlyForMock: () => '`script` is only valid for providers of type `mock`; remove it or make the provider `type: mock`',
  mcpNeedsOneTransport: () => 'an MCP server needs either `command` (stdio) or `url` (Streamable HTTP), not both and not neither',
  unknownMcpServer: (name: string, suggestion: string | null) => `unknown MCP server ${quote(name)}: not declared in \`mcp_servers\`${didYouMean(suggestion)}`,
  maxTokensParamOnlyForOpenAi: () => '`max_tokens_param` is only valid for providers of type `openai`; remove it',
  mockStepCalls: () => 'a scripted step is a text template or a mapping with `calls` (a list of `{name, arguments}`)',
  latencyRange: (min: number, max: number) => `\`latency_ms.min\` (${min}) is greater than \`latency_ms.max\` (${max})`,
  mockBranchesMixed: (agent: string) =>
    `the script of ${quote(agent)} mixes branches (\`{when, steps}\`) and steps: once one entry is a branch, every entry must be; put plain steps in a last branch without \`when\``,
  mockBranchSteps: () => 'a script branch needs `steps`; give it a reply template or a list of steps, as an unbranched script has',
  mockBranchDefaultNotLast: (agent: string) =>
    `a branch without \`when\` answers every payload, so the branches of ${quote(agent)} after it would never answer: give it a \`when\` or move it last`,
  mockWhenEmpty: () => '`when` needs at least one payload field to match; give one (`when: {category: billing}`), or remove `when` for a branch that answers every payload',
  mockWhenValue: (field: string) => `\`when.${field}\` must be a value, a \`/regex/\` or a list of them, not a mapping (a nested field is written \`a.b: value\`)`,
  mockWhenRegex: (field: string, text: string, problem: string) =>
    `\`when.${field}\`: ${JSON.stringify(text)} is not a valid regular expression (${problem}); fix it, or write the value without the slashes to match it as text`,
  scriptUnknownListener: (name: string, suggestion: string | null) => `script for unknown listener ${quote(name)}${didYouMean(suggestion)}`,

  envUnsetNoDefault: (variable: string) =>
    `environment variable ${quote(variable)} is not set and \`\${${variable}}\` has no default; export it, or give a default: \`\${${variable}:-value}\` (write \`$\${\` for a literal \`\${\`)`,
  envMalformed: (token: string) =>
    `malformed substitution ${quote(token)}: expected \`\${NAME}\` or \`\${NAME:-default}\`, NAME made of letters, digits and \`_\` (write \`$\${\` for a literal \`\${\`)`,
  envUnclosed: (token: string) => `substitution ${quote(token)} has no closing \`}\`; close it, or write \`$\${\` for a literal \`\${\``,
  secretInsteadOfEnvName: (key: string) =>
    `${quote(key)} looks like an actual secret, not the name of an environment variable: put the key in an env var and name the variable (the value has not been printed)`,
  badEnvName: (key: string) => `${quote(key)} must be the name of an environment variable (letters, digits and \`_\`, not starting with a digit)`,

  timeoutDefeatsFailover: (
    listener: string,
    timeout: number,
    providers: readonly { name: string; keyPath: string; line: number | null; timeout: number; attempts: number; worst: number }[],
    starved: string | null,
    minimum: number,
  ) =>
    `listener ${quote(listener)} times out after ${timeout} s, before its providers are done: ${providers
      .map(
        (p) =>
          `${quote(p.name)} (${p.keyPath}${p.line === null ? '' : `, line ${p.line}`}) may take ${p.timeout} s x ${p.attempts} attempt${p.attempts === 1 ? '' : 's'}${p.worst > p.timeout * p.attempts ? ` + ${+(p.worst - p.timeout * p.attempts).toFixed(3)} s backoff = ${+p.worst.toFixed(3)} s` : ''}`,
      )
      .join(', ')}, so ${
      starved === null ? (providers.length === 1 ? 'its retries are cut short' : "the last provider's retries are cut short") : `failover to ${quote(starved)} can never happen`
    }; set \`timeout_seconds\` to at least ${minimum} (or remove it: the default is derived from the providers), or lower the providers' \`timeout_seconds\` or \`max_retries\``,
  providerKeyUse: (provider: string, agents: readonly string[]) =>
    `the API key of provider ${quote(provider)}, ${agents.length > 0 ? `used by ${agents.map(quote).join(', ')}` : 'which no listener uses yet'}`,
  remoteTokenUnset: (variable: string, listener: string) =>
    `environment variable ${quote(variable)} is not set (the token of the remote A2A agent ${quote(listener)}); export it before \`organism serve\`, or its deliveries fail`,
  webhookSecretUnset: (variable: string, webhook: string) =>
    `environment variable ${quote(variable)} is not set (the signing secret of webhook ${quote(webhook)}); export it (\`whsec_\` and base64) before \`organism serve\`: until then its deliveries fail`,
  tokenUse: (name: string, role: string) => `the ${role} token ${quote(name)}`,
  envUnset: (variable: string, what: string, refused: boolean) =>
    `environment variable ${quote(variable)} is not set (${what}); export it before \`organism serve\`${
      refused ? ', which refuses to start without it' : ' (requests to this provider would carry no key)'
    }`,
  providerKeyUnset: (provider: string, variable: string, agents: readonly string[]) =>
    `environment variable ${quote(variable)} is not set: it holds the API key of provider ${quote(provider)}, which ${agents.map(quote).join(', ')} call${agents.length === 1 ? 's' : ''}; export it and start again (without it requests would go out with no Authorization)`,

  unknownPayloadType: (name: string, suggestion: string | null, known: readonly string[]) =>
    `unknown payload type ${quote(name)}${suggestion ? didYouMean(suggestion) : `; declare it under \`payloads\` or export it from a handler module (known types: ${known.join(', ')})`}`,
  badFieldType: (expr: string) =>
    `invalid field type ${quote(expr)}: expected string, integer, number, boolean or a payload type name, optionally as a list (\`T[]\` or \`list<T>\`) and optional (trailing \`?\`)`,
  unknownFieldType: (name: string, suggestion: string | null) =>
    `field refers to unknown type ${quote(name)}${suggestion ? didYouMean(suggestion) : '; use string, integer, number, boolean or a payload type name'}`,
  exportedTypeUnknownRef: (typeName: string, field: string, ref: string, modulePath: string, suggestion: string | null) =>
    `payload type ${quote(typeName)} exported by ${quote(modulePath)} has field ${quote(field)} of unknown type ${quote(ref)}${
      suggestion ? didYouMean(suggestion) : '; use string, integer, number, boolean or a payload type name'
    }`,
  emptyPayloadList: () => 'a listener must accept at least one payload type: write `payload: Type` or `payload: [TypeA, TypeB]`',
  duplicateListenerPayload: (name: string) => `payload type ${quote(name)} is listed twice; list each type once`,
  duplicatePayloadType: (name: string, first: string, second: string) => `duplicate payload type ${quote(name)}: declared by ${first} and by ${second}; rename or remove one`,
  builtinPayloadType: (name: string) => `payload type name ${quote(name)} is reserved for a built-in type; choose another name`,
  recursivePayloadType: (name: string) => `payload type ${quote(name)} contains itself through required fields; make one of them optional or a list`,
} as const;

/** Expected-type phrases used with `wrongType`. */
export const Expected = {
  string: 'a string',
  boolean: 'true or false',
  positiveInteger: 'a positive integer',
  nonNegativeInteger: 'a non-negative integer',
  integer: 'an integer',
  positiveNumber: 'a positive number',
  nonNegativeNumber: 'a non-negative number',
  mapping: 'a mapping',
  list: 'a list',
  stringList: 'a list of strings',
  fieldType: 'a type expression or a mapping with `type`',
  toolEntry: '`./module.ts#export` or a mapping with `use`',
  guardEntry: '`./module.ts#export` or a mapping with one of `use`, `max_input_bytes`, `forbidden`, `pii`',
} as const;
