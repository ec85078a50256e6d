import type { SwaggerOptions } from '@fastify/swagger';

/** The OpenAPI 3.1 document, generated from the route schemas (the same ones that validate and serialize). */
export function openApiOptions(version: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'organism control service',
        version,
        description:
          'Operator API of a running organism. Every route except /health needs `Authorization: Bearer <token>`; ' +
          'viewer tokens may use GET routes except /capabilities, operator tokens everything. ' +
          'Bodies and responses are camelCase; request bodies and query names are accepted in snake_case too. ' +
          'Every error body has `detail` (the text) and `code`.',
      },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearerAuth: [] }],
      tags: [
        { name: 'organism' },
        { name: 'capabilities' },
        { name: 'agents' },
        { name: 'threads' },
        { name: 'messages' },
        { name: 'inject' },
        { name: 'usage' },
        { name: 'journal' },
        { name: 'schedules' },
        { name: 'webhooks' },
        { name: 'health' },
        { name: 'auth' },
      ],
    },
  };
}
