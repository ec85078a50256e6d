import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { configChanges } from '../../src/organism/config-changes.js';
import { CONFIG_PATH } from '../config/helpers.js';

const yaml = (llm: string, mcp: string) => `organism: {name: changes}
llm:
${llm}
mcp_servers:
${mcp}
listeners: []
`;

describe('configChanges: every key a reload applies is named (serve --watch applies only what differs)', () => {
  it('names llm.record, the reply limits and MCP servers field by field', async () => {
    const before = await loadOrganismFromString(yaml('  record: full', '  - {name: gh, command: node gh.js}'), CONFIG_PATH);
    const after = await loadOrganismFromString(
      yaml('  record: metadata\n  max_reply_bytes: 1000\n  max_messages_per_reply: 3', '  - {name: gh, command: node gh2.js}\n  - {name: web, url: "http://127.0.0.1:9/mcp"}'),
      CONFIG_PATH,
    );
    expect(configChanges(before.config, after.config).changed).toEqual(['llm.record', 'llm.max_reply_bytes', 'llm.max_messages_per_reply', 'mcp_servers.gh.command', 'mcp_servers.web']);
    expect(configChanges(after.config, after.config).changed).toEqual([]);
  });
});
