import { Type } from 'typebox';

export const HealthResponse = Type.Object({ status: Type.Literal('healthy'), organism: Type.String(), uptimeSeconds: Type.Number() }, { title: 'HealthResponse' });

/** 503 from /health: the storage's problem, with the error body's code and detail. */
export const HealthProblem = Type.Object(
  {
    status: Type.Union([Type.Literal('degraded'), Type.Literal('unhealthy')], {
      description: 'degraded: passes by itself (the disk has room again, the database answers again); unhealthy: needs the operator (data directory deleted, database damaged)',
    }),
    organism: Type.String(),
    uptimeSeconds: Type.Number(),
    code: Type.String({ description: 'STORAGE_FULL, STORAGE_LOST, STORAGE_CORRUPT or STORAGE_UNAVAILABLE' }),
    detail: Type.String(),
  },
  { title: 'HealthProblem' },
);
