import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { CONFIG_PATH, problemsOf, y } from './helpers.js';

const BASE = y`
  organism: {name: tools}
  payloads:
    Note: {fields: {text: string}}
`;

describe('tool calling, MCP and recording keys', () => {
  it('reads reply_format, max_tokens_param, llm.record, mcp_servers, listener mcp_servers and max_tool_rounds, and scripted tool calls', async () => {
    const { config } = await loadOrganismFromString(
      `${BASE}${y`
        llm:
          record: metadata
          providers:
            - name: oa
              type: openai
              reply_format: xml
              max_tokens_param: max_completion_tokens
            - name: mock
              type: mock
              script:
                writer:
                  - calls: [{name: files_read, arguments: {path: "{{text}}"}}]
                  - '<done/>'
        mcp_servers:
          - {name: files, command: node server.js --root ., tools: [read]}
          - {name: search, url: "http://127.0.0.1:9/mcp", timeout_seconds: 5}
        listeners:
          - name: writer
            handler: builtin:llm
            prompt: p
            model: gpt-4o
            payload: Note
            reply_format: tools
            mcp_servers: [files, search]
            max_tool_rounds: 3
            max_tool_calls_per_round: 4
      `}`,
      CONFIG_PATH,
    );
    expect(config.llm.record).toBe('metadata');
    expect(config.llm.providers[0]).toMatchObject({ replyFormat: 'xml', maxTokensParam: 'max_completion_tokens' });
    expect(config.llm.providers[1]!.script['writer']).toEqual([{ calls: [{ name: 'files_read', arguments: { path: '{{text}}' } }] }, '<done/>']);
    expect(config.mcpServers).toEqual([
      { name: 'files', command: ['node', 'server.js', '--root', '.'], url: null, tools: ['read'], timeoutSeconds: 30 },
      { name: 'search', command: null, url: 'http://127.0.0.1:9/mcp', tools: null, timeoutSeconds: 5 },
    ]);
    expect(config.listeners[0]).toMatchObject({ replyFormat: 'tools', mcpServers: ['files', 'search'], maxToolRounds: 3, maxToolCallsPerRound: 4 });
  });

  it('reports each problem at its place, with the closest valid value', async () => {
    const problems = await problemsOf(
      `${BASE}${y`
      llm:
        record: everything
        providers:
          - {name: m, type: mock, reply_format: json, max_tokens_param: max_tokens, script: {writer: [{text: hi}]}}
      mcp_servers:
        - {name: files, command: node s.js, url: "http://127.0.0.1:9/mcp"}
        - {name: empty}
      listeners:
        - {name: writer, handler: builtin:llm, prompt: p, model: m1, payload: Note, reply_format: tool, mcp_servers: [fils], max_tool_rounds: 0, max_tool_calls_per_round: 1.5}
    `}`,
    );
    const byPath = Object.fromEntries(problems.map((p) => [p.keyPath, `${p.line}: ${p.message}`]));
    expect(byPath['llm.record']).toBe('5: expected one of full, metadata, off, got "everything"');
    expect(byPath['llm.providers[0].reply_format']).toMatch(/^7: expected one of tools, xml, got "json"/);
    expect(byPath['llm.providers[0].max_tokens_param']).toBe('7: `max_tokens_param` is only valid for providers of type `openai`; remove it');
    expect(byPath['llm.providers[0].script.writer[0].calls']).toBe('7: missing required key `calls`; add `calls: ...` here');
    expect(byPath['mcp_servers[0].command']).toContain('needs either `command` (stdio) or `url` (Streamable HTTP)');
    expect(byPath['mcp_servers[1].name']).toContain('needs either `command` (stdio) or `url`');
    expect(byPath['listeners[0].reply_format']).toBe('12: expected one of tools, xml, got "tool"; did you mean `tools`?');
    expect(byPath['listeners[0].mcp_servers[0]']).toBe('12: unknown MCP server `fils`: not declared in `mcp_servers`; did you mean `files`?');
    expect(byPath['listeners[0].max_tool_rounds']).toBe('12: expected a positive integer, got 0');
    expect(byPath['listeners[0].max_tool_calls_per_round']).toBe('12: expected a positive integer, got 1.5');
  });
});
