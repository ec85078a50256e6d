import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, problemsOf, y } from './helpers.js';

interface Row {
  readonly name: string;
  readonly yaml: string;
  readonly keyPath: string;
  readonly line: number | null;
  readonly message: string;
  /** How many problems the config has in all (default 1: the expected one alone). */
  readonly count?: number;
}

/** A valid listener block, reused where a row needs a second, correct listener. */
const SHOUT = `
  - name: shout
    handler: ./tools.ts#uppercase
    payload: Announcement`;

const rows: Row[] = [
  {
    name: 'unknown top-level key, with the closest valid one',
    yaml: y`
      organism: {name: t}
      mx_hops: 3
      listeners:${SHOUT}
    `,
    keyPath: 'mx_hops',
    line: 2,
    message: 'unknown key `mx_hops`; did you mean `max_hops`?',
  },
  {
    name: 'unknown key with nothing close lists the valid keys',
    yaml: y`
      organism: {name: t}
      journal:
        colour: red
      listeners:${SHOUT}
    `,
    keyPath: 'journal.colour',
    line: 3,
    message: 'unknown key `colour`; valid keys: max_attempts, retain_days, failed_retain_days',
  },
  {
    name: 'unknown listener key',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          peer: []
    `,
    keyPath: 'listeners[0].peer',
    line: 6,
    message: 'unknown key `peer`; did you mean `peers`?',
  },
  {
    name: 'missing organism.name',
    yaml: y`
      organism: {}
      listeners:${SHOUT}
    `,
    keyPath: 'organism.name',
    line: 1,
    message: 'missing required key `name`; add `name: ...` here',
  },
  {
    name: 'missing listeners',
    yaml: y`
      organism:
        name: t
    `,
    keyPath: 'listeners',
    line: 1,
    message: 'missing required key `listeners`; add `listeners: ...` here',
  },
  {
    name: 'missing listener handler',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          payload: Announcement
    `,
    keyPath: 'listeners[0].handler',
    line: 3,
    message: 'missing required key `handler`; add `handler: ...` here',
    // Without its handler module, nothing declares Announcement either.
    count: 2,
  },
  {
    name: 'wrong type: max_hops is not a number',
    yaml: y`
      organism: {name: t}
      max_hops: "many"
      listeners:${SHOUT}
    `,
    keyPath: 'max_hops',
    line: 2,
    message: 'expected a positive integer, got "many"',
  },
  {
    name: 'zero limit',
    yaml: y`
      organism: {name: t}
      max_concurrent_handlers: 0
      listeners:${SHOUT}
    `,
    keyPath: 'max_concurrent_handlers',
    line: 2,
    message: 'expected a positive integer, got 0',
  },
  {
    name: 'negative limit',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          timeout_seconds: -1
    `,
    keyPath: 'listeners[0].timeout_seconds',
    line: 6,
    message: 'expected a positive number, got -1',
  },
  {
    name: 'zero journal attempts',
    yaml: y`
      organism: {name: t}
      journal: {max_attempts: 0}
      listeners:${SHOUT}
    `,
    keyPath: 'journal.max_attempts',
    line: 2,
    message: 'expected a positive integer, got 0',
  },
  {
    name: 'wrong type: peers is not a list',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          peers: everyone
    `,
    keyPath: 'listeners[0].peers',
    line: 6,
    message: 'expected a list, got "everyone"',
  },
  {
    name: 'bad provider type',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: p
            type: gemini
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].type',
    line: 5,
    message: 'expected one of mock, openai, anthropic, got "gemini"',
  },
  {
    name: 'bad token role, with a suggestion',
    yaml: y`
      organism: {name: t}
      auth:
        tokens:
          - {name: ops, role: operater, token_env: OPS_TOKEN}
      listeners:${SHOUT}
    `,
    keyPath: 'auth.tokens[0].role',
    line: 4,
    message: 'expected one of operator, viewer, approver, got "operater"; did you mean `operator`?',
  },
  {
    name: 'unknown peer',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          peers: [shuot]
    `,
    keyPath: 'listeners[0].peers[0]',
    line: 6,
    message: 'unknown peer `shuot`: no listener has that name; did you mean `shout`?',
  },
  {
    name: 'a listener that is its own peer',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          peers:
            - shout
    `,
    keyPath: 'listeners[0].peers[0]',
    line: 7,
    message: 'listener `shout` lists itself as a peer; remove it from `peers` (a listener may always reply to its sender)',
  },
  {
    name: 'duplicate listener name',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}${SHOUT}
    `,
    keyPath: 'listeners[1].name',
    line: 6,
    message: 'duplicate listener name `shout` (first declared at line 3); rename one of them',
  },
  {
    name: 'duplicate provider name',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - {name: local, type: mock}
          - {name: local, type: openai, base_url: "http://127.0.0.1:11434/v1"}
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[1].name',
    line: 5,
    message: 'duplicate provider name `local` (first declared at line 4); rename one of them',
  },
  {
    name: 'system. prefix is reserved',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: system.shout
          handler: ./tools.ts#uppercase
          payload: Announcement
    `,
    keyPath: 'listeners[0].name',
    line: 3,
    message: 'listener name `system.shout` is reserved: names starting with `system.` belong to built-in listeners; choose another name',
  },
  {
    name: 'invalid listener name',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: "shout loud"
          handler: ./tools.ts#uppercase
          payload: Announcement
    `,
    keyPath: 'listeners[0].name',
    line: 3,
    message: 'invalid listener name `shout loud`: use letters, digits, `_`, `-` and `.`, starting with a letter or `_`',
  },
  {
    name: 'handler module not found',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./missing/tools.ts#uppercase
          payload: Announcement
    `,
    keyPath: 'listeners[0].handler',
    line: 4,
    message: `handler module \`./missing/tools.ts\` not found (looked for ${path.join(FIXTURES, 'missing', 'tools.ts')}); fix the path, which is relative to the config file`,
    // Nothing declares Announcement once tools.ts is not loaded.
    count: 2,
  },
  {
    name: 'handler export not found, with the closest export',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#upercase
          payload: Announcement
    `,
    keyPath: 'listeners[0].handler',
    line: 4,
    message: 'handler module `./tools.ts` has no export `upercase`; did you mean `uppercase`?',
  },
  {
    name: 'handler export not found, nothing close: the function exports are listed',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#announce
          payload: Announcement
    `,
    keyPath: 'listeners[0].handler',
    line: 4,
    message: 'handler module `./tools.ts` has no export `announce`; export it, or name one of its function exports: uppercase',
  },
  {
    name: 'unknown one-letter peer gets no far-fetched suggestion',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: a
          handler: ./tools.ts#uppercase
          payload: Announcement
          peers: [b]
    `,
    keyPath: 'listeners[0].peers[0]',
    line: 6,
    message: 'unknown peer `b`: no listener has that name; declare a listener named `b` or remove it from `peers`',
  },
  {
    name: 'handler export that is not a function',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#notAFunction
          payload: Announcement
    `,
    keyPath: 'listeners[0].handler',
    line: 4,
    message: 'export `notAFunction` of `./tools.ts` is not a function (got number); export a handler `(payload, ctx) => ...` under that name or name another export',
  },
  {
    name: 'handler module that throws while loading',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: other
          handler: ./fails-on-load.ts#anything
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: "handler module `./fails-on-load.ts` failed to load: boom while loading (while the module loaded); fix the module's top-level code",
  },
  {
    name: 'malformed handler ref',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: other
          handler: tools.ts:uppercase
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: 'malformed handler `tools.ts:uppercase`: expected `./path/to/module.ts#exportName` (relative to the config file) or `builtin:llm`',
  },
  {
    name: 'handler module that is neither .ts nor .js',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: other
          handler: ./tools.py#uppercase
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: 'handler module in `./tools.py#uppercase` must be a .ts or .js file',
  },
  {
    name: 'remote A2A handler that is not an http(s) URL',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: far
          handler: a2a:ftp://agents.example.com/x
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: 'malformed remote agent handler `a2a:ftp://agents.example.com/x`: expected `a2a:https://host/path` (an http or https URL without credentials; put the token in `token_env`)',
  },
  {
    name: 'token_env on a listener that is not a remote A2A agent',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          token_env: SHOUT_TOKEN
    `,
    keyPath: 'listeners[0].token_env',
    line: 6,
    message: '`token_env` applies to `handler: a2a:<url>` listeners only (a remote A2A agent); remove it',
  },
  {
    name: 'an LLM key on a remote A2A agent',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: far
          handler: a2a:https://agents.example.com/a2a/far
          payload: Announcement
          prompt: Be helpful
    `,
    keyPath: 'listeners[1].prompt',
    line: 9,
    message: '`prompt` does not apply to a `handler: a2a:<url>` listener (a remote A2A agent answers it); remove it',
  },
  {
    name: 'a public agent card without A2A',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          expose: {mcp: true, a2a_public_card: true}
    `,
    keyPath: 'listeners[0].expose.a2a_public_card',
    line: 6,
    message: '`expose.a2a_public_card` applies to a listener served over A2A (there is no agent card otherwise); set `expose.a2a: true` or remove it',
  },
  {
    name: 'unknown expose key',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Announcement
          expose: {a2a: true, mpc: true}
    `,
    keyPath: 'listeners[0].expose.mpc',
    line: 6,
    message: 'unknown key `mpc`; did you mean `mcp`?',
  },
  {
    name: 'on_timeout without timeout_seconds on a human listener',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: desk
          handler: builtin:human
          payload: Announcement
          on_timeout: fail
    `,
    keyPath: 'listeners[1].on_timeout',
    line: 9,
    message: '`on_timeout` needs `timeout_seconds` on a `builtin:human` listener (an ask waits for ever without one); set `timeout_seconds` or remove `on_timeout`',
  },
  {
    name: 'on_timeout of the wrong shape',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: desk
          handler: builtin:human
          payload: Announcement
          timeout_seconds: 60
          on_timeout: later
    `,
    keyPath: 'listeners[1].on_timeout',
    line: 10,
    message: '`on_timeout` must be `fail` or `{reply: {...payload}}` (the answer given when nobody answers in time)',
  },
  {
    name: 'on_timeout on a listener people do not answer',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
          on_timeout: fail
    `,
    keyPath: 'listeners[0].on_timeout',
    line: 6,
    message: '`on_timeout` applies to `handler: builtin:human` listeners only; remove it',
  },
  {
    name: 'a prompt on a human listener',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: desk
          handler: builtin:human
          payload: Announcement
          prompt: You are a person.
    `,
    keyPath: 'listeners[1].prompt',
    line: 9,
    message: '`prompt` does not apply to a `builtin:human` listener (people answer it); remove it',
  },
  {
    name: 'unknown built-in handler',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: other
          handler: builtin:gpt
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: 'unknown built-in handler `builtin:gpt`; use `builtin:llm` or `builtin:human`',
  },
  {
    name: 'builtin:llm without a prompt',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: writer
          handler: builtin:llm
          payload: Announcement
    `,
    keyPath: 'listeners[1].prompt',
    line: 6,
    message: "a `builtin:llm` listener needs a `prompt`; add `prompt:` with the agent's instructions",
  },
  {
    name: 'builtin:llm with a model no provider serves',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - {name: openai, type: openai, api_key_env: OPENAI_API_KEY, models: [gpt-4o]}
      listeners:${SHOUT}
        - name: writer
          handler: builtin:llm
          prompt: Write.
          model: claude-3-haiku
          payload: Announcement
    `,
    keyPath: 'listeners[1].model',
    line: 12,
    message: "no provider serves model `claude-3-haiku` (providers: openai (gpt-4o)); add it to a provider's `models` or use a model one serves",
  },
  {
    name: 'builtin:llm without a model while providers are declared',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - {name: mock, type: mock}
      listeners:
        - name: writer
          handler: builtin:llm
          prompt: Write.
          payload: Announcement
          peers: [shout]${SHOUT}
    `,
    keyPath: 'listeners[0].model',
    line: 6,
    message: 'a `builtin:llm` listener needs a `model` when `llm.providers` are declared; add `model:` naming a model a provider serves',
  },
  {
    name: 'script on a provider that is not mock',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: openai
            type: openai
            script: {shout: ["hi"]}
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script',
    line: 6,
    message: '`script` is only valid for providers of type `mock`; remove it or make the provider `type: mock`',
  },
  {
    name: 'mock script for an unknown listener',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shuot: ["hi"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shuot',
    line: 7,
    message: 'script for unknown listener `shuot`; did you mean `shout`?',
  },
  {
    name: 'mock script mixing branches and steps',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: {text: hi}
                  steps: ["a"]
                - "b"
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[1]',
    line: 10,
    message: 'the script of `shout` mixes branches (`{when, steps}`) and steps: once one entry is a branch, every entry must be; put plain steps in a last branch without `when`',
  },
  {
    name: 'mock script branch without steps',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: {text: hi}
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0].steps',
    line: 8,
    message: 'a script branch needs `steps`; give it a reply template or a list of steps, as an unbranched script has',
  },
  {
    name: 'mock script branch without when before others',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - steps: ["any"]
                - when: {text: hi}
                  steps: ["hi"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0]',
    line: 8,
    message: 'a branch without `when` answers every payload, so the branches of `shout` after it would never answer: give it a `when` or move it last',
  },
  {
    name: 'mock script when with an invalid regex',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: {text: "/refund(/i"}
                  steps: ["a"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0].when.text',
    line: 8,
    message:
      '`when.text`: "/refund(/i" is not a valid regular expression (Invalid regular expression: /refund(/i: Unterminated group); fix it, or write the value without the slashes to match it as text',
  },
  {
    name: 'mock script when with a mapping value',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: {customer: {tier: gold}}
                  steps: ["a"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0].when.customer',
    line: 8,
    message: '`when.customer` must be a value, a `/regex/` or a list of them, not a mapping (a nested field is written `a.b: value`)',
  },
  {
    name: 'mock script when that is not a mapping',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: billing
                  steps: ["a"]
                - steps: ["b"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0].when',
    line: 8,
    message: 'expected a mapping, got "billing"',
  },
  {
    name: 'mock script with an empty when',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: mock
            type: mock
            script:
              shout:
                - when: {}
                  steps: ["a"]
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].script.shout[0].when',
    line: 8,
    message: '`when` needs at least one payload field to match; give one (`when: {category: billing}`), or remove `when` for a branch that answers every payload',
  },
  {
    name: 'api_key_env holding an actual key',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - name: openai
            type: openai
            api_key_env: sk-proj-abcdefghijklmnopqrstuvwxyz012345
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].api_key_env',
    line: 6,
    message: '`api_key_env` looks like an actual secret, not the name of an environment variable: put the key in an env var and name the variable (the value has not been printed)',
  },
  {
    name: 'token_env that is not a variable name',
    yaml: y`
      organism: {name: t}
      auth:
        tokens:
          - {name: ops, role: operator, token_env: "ops token"}
      listeners:${SHOUT}
    `,
    keyPath: 'auth.tokens[0].token_env',
    line: 4,
    message: '`token_env` must be the name of an environment variable (letters, digits and `_`, not starting with a digit)',
  },
  {
    name: 'provider base_url that is not a URL',
    yaml: y`
      organism: {name: t}
      llm:
        providers:
          - {name: local, type: openai, base_url: "localhost:11434"}
      listeners:${SHOUT}
    `,
    keyPath: 'llm.providers[0].base_url',
    line: 4,
    message: 'expected an http:// or https:// URL, got "localhost:11434"',
  },
  {
    name: 'pricing entry without completion price',
    yaml: y`
      organism: {name: t}
      llm:
        pricing:
          my-model: {prompt: 1.5}
      listeners:${SHOUT}
    `,
    keyPath: 'llm.pricing.my-model.completion',
    line: 4,
    message: 'missing required key `completion`; add `completion: ...` here',
  },
  {
    name: 'unknown listener payload type, with the closest type',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          payload: Anouncement
    `,
    keyPath: 'listeners[0].payload',
    line: 5,
    message: 'unknown payload type `Anouncement`; did you mean `Announcement`?',
  },
  {
    name: 'bad field type expression',
    yaml: y`
      organism: {name: t}
      payloads:
        Note:
          fields:
            tags: "list<string"
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Note.fields.tags',
    line: 5,
    message: 'invalid field type `list<string`: expected string, integer, number, boolean or a payload type name, optionally as a list (`T[]` or `list<T>`) and optional (trailing `?`)',
  },
  {
    name: 'field of an unknown type',
    yaml: y`
      organism: {name: t}
      payloads:
        Note:
          fields:
            count: {type: intger, description: how many}
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Note.fields.count.type',
    line: 5,
    message: 'field refers to unknown type `intger`; did you mean `integer`?',
  },
  {
    name: 'unknown key in a field declaration',
    yaml: y`
      organism: {name: t}
      payloads:
        Note:
          fields:
            text:
              type: string
              optinal: true
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Note.fields.text.optinal',
    line: 7,
    message: 'unknown key `optinal`; did you mean `optional`?',
  },
  {
    name: 'payload type declared in YAML and exported by a handler module',
    yaml: y`
      organism: {name: t}
      payloads:
        Announcement:
          fields: {text: string}
      listeners:${SHOUT}
    `,
    keyPath: 'listeners[0].handler',
    line: 7,
    message: 'duplicate payload type `Announcement`: declared by organism.yaml and by ./tools.ts; rename or remove one',
  },
  {
    name: 'payload type exported by two modules, one with a dangling field type',
    yaml: y`
      organism: {name: t}
      listeners:${SHOUT}
        - name: other
          handler: ./other-announcement.ts#noop
          payload: Announcement
    `,
    keyPath: 'listeners[1].handler',
    line: 7,
    message: 'duplicate payload type `Announcement`: declared by ./tools.ts and by ./other-announcement.ts; rename or remove one',
    count: 2,
  },
  {
    name: 'payload type named like a built-in',
    yaml: y`
      organism: {name: t}
      payloads:
        SystemError:
          fields: {text: string}
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.SystemError',
    line: 3,
    message: 'payload type name `SystemError` is reserved for a built-in type; choose another name',
  },
  {
    name: 'payload type that requires itself',
    yaml: y`
      organism: {name: t}
      payloads:
        Node:
          fields: {next: Node, label: string}
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Node',
    line: 3,
    message: 'payload type `Node` contains itself through required fields; make one of them optional or a list',
  },
  {
    name: 'YAML syntax error',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          handler: ./tools.ts#uppercase
          handler: ./tools.ts#other
    `,
    keyPath: '',
    line: 5,
    message: 'YAML syntax error: Map keys must be unique; remove or rename one of the two',
  },
  {
    name: 'a key indented deeper than its sibling that has a value: one error, on that line',
    yaml: y`
      organism: {name: t}
      listeners:
        - name: shout
          payload: Announcement
            handler: ./tools.ts#uppercase
    `,
    keyPath: '',
    line: 5,
    message:
      'YAML syntax error: `handler: ./tools.ts#uppercase` is indented deeper than the key on line 4, which already has a value; indent it like that key (or give that key no value to nest under it)',
  },
  {
    name: 'a key indented less than its siblings: the error names that line and what to do',
    // Written out: y\`\` would strip the short indentation this row is about.
    yaml: [
      'organism: {name: t}',
      'listeners:',
      '  - name: shout',
      '    payload: Announcement',
      '   handler: ./tools.ts#uppercase',
      '  - name: other',
      '    payload: Announcement',
      '    handler: ./tools.ts#uppercase',
      '',
    ].join('\n'),
    keyPath: '',
    line: 5,
    message:
      'YAML syntax error: Sequence item without - indicator; check the indentation of `handler: ./tools.ts#uppercase`: keys of one mapping start in the same column, list items with `- `, indented with spaces',
  },
  {
    name: 'a field type from another language: did you mean',
    yaml: y`
      organism: {name: t}
      payloads:
        Job:
          fields: {priority: int, ratio: double, done: bool, tags: list<str>}
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Job.fields.priority',
    line: 4,
    message: 'field refers to unknown type `int`; did you mean `integer`?',
    count: 4,
  },
  {
    name: 'a field type nothing is close to lists the valid ones',
    yaml: y`
      organism: {name: t}
      payloads:
        Job:
          fields: {when: timestamp}
      listeners:${SHOUT}
    `,
    keyPath: 'payloads.Job.fields.when',
    line: 4,
    message: 'field refers to unknown type `timestamp`; use string, integer, number, boolean or a payload type name',
  },
  {
    name: 'top level that is not a mapping',
    yaml: y`
      - just
      - a list
    `,
    keyPath: '',
    line: 1,
    message: 'expected a mapping of keys at the top level of the file; start from `organism init` or write `organism: {name: ...}` and `listeners:` at column 1',
  },
];

describe('broken configs', () => {
  it('has a substantial table', () => {
    expect(rows.length).toBeGreaterThanOrEqual(15);
  });

  it.each(rows)('$name', async (row) => {
    const problems = await problemsOf(row.yaml);
    const match = problems.find((p) => p.keyPath === row.keyPath && p.message === row.message);
    expect(match, `got:\n${problems.map((p) => `${p.line} ${p.keyPath}: ${p.message}`).join('\n')}`).toBeDefined();
    expect(match?.line).toBe(row.line);
    expect(match?.file).toBe(path.join(FIXTURES, 'organism.yaml'));
    expect(problems).toHaveLength(row.count ?? 1);
  });

  /**
   * What to do, in one of the forms the messages use: a suggestion, the valid values, the
   * expected type, or an imperative.
   */
  const ACTION =
    /did you mean `[^`]+`\?|valid keys: |expected .+, got |: expected |[;:] (add|remove|rename|fix|declare|use|set|export|choose|install|check|start|give|indent|put|make|the other listeners|the only built-in)\b| must be /;

  it('every problem of every row names its file and line and says what to do', async () => {
    const vague: string[] = [];
    for (const row of rows) {
      for (const p of await problemsOf(row.yaml)) {
        if (p.file !== path.join(FIXTURES, 'organism.yaml') || p.line === null || !ACTION.test(p.message)) vague.push(`${row.name}: ${p.line} ${p.keyPath}: ${p.message}`);
      }
    }
    expect(vague).toEqual([]);
  });
});
