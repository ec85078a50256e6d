import { Type } from 'typebox';

export const HealthResponse = Type.Object(
  { status: Type.Literal('healthy'), organism: Type.String(), uptimeSeconds: Type.Number() },
  { title: 'HealthResponse' },
);
