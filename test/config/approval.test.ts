import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/index.js';
import { sanitizeConfig } from '../../src/config/sanitize.js';
import { CONFIG_PATH, problemsOf } from './helpers.js';

/** An LLM agent `desk` with a peer, a code tool, two MCP servers (one listing its tools, one not) and `approval` as given. */
const desk = (approval: string, handler = 'builtin:llm') =>
  [
    'organism: {name: desk}',
    'llm:',
    '  providers:',
    '    - {name: mock, type: mock}',
    'mcp_servers:',
    '  - {name: files, command: [node, files.js], tools: [read_file, list]}',
    '  - {name: search, url: http://127.0.0.1:9/mcp}',
    'listeners:',
    '  - name: desk',
    `    handler: ${handler}`,
    ...(handler === 'builtin:llm' ? ['    prompt: You answer.', '    model: m', '    mcp_servers: [files, search]', '    tools: [./code-tools.ts#lookupOrder]'] : []),
    '    payload: Announcement',
    '    peers: [refunds]',
    `    approval: ${approval}`,
    '  - name: refunds',
    '    handler: ./tools.ts#uppercase',
    '    payload: Announcement',
    '',
  ].join('\n');

const problems = async (text: string) => (await problemsOf(text)).map((p) => [p.keyPath, p.message]);

describe('approval: of an LLM agent', () => {
  it('names its send_to_<peer> tools, reply, its code tools and its MCP tools; kept in the sanitized config', async () => {
    const loaded = await loadOrganismFromString(desk('[send_to_refunds, reply, lookupOrder, files_read_file, search_anything]'), CONFIG_PATH);
    const agent = loaded.config.listeners.find((l) => l.name === 'desk')!;
    expect(agent.approval).toEqual(['send_to_refunds', 'reply', 'lookupOrder', 'files_read_file', 'search_anything']);
    expect(sanitizeConfig(loaded.config).listeners).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'desk', approval: agent.approval })]));
    expect(loaded.config.listeners.find((l) => l.name === 'refunds')).not.toHaveProperty('approval');
  });

  it('an unknown name is a problem at its item, suggesting the closest tool', async () => {
    expect(await problems(desk('[send_to_refund, files_delete]'))).toEqual([
      ['listeners[0].approval[0]', expect.stringContaining('did you mean `send_to_refunds`?')],
      ['listeners[0].approval[1]', expect.stringMatching(/files_delete.*not a tool of agent `desk`/)],
    ]);
  });

  it('only LLM agents have it', async () => {
    expect(await problems(desk('[reply]', './tools.ts#uppercase'))).toEqual([['listeners[0].approval', expect.stringContaining('only valid for `builtin:llm`')]]);
  });
});
