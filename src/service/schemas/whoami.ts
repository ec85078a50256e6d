import { Type } from 'typebox';

export const WhoAmI = Type.Object(
  {
    name: Type.String({ description: 'The token name (auth.tokens[].name, or operator for the generated/env token)' }),
    role: Type.Enum(['operator', 'viewer', 'approver']),
  },
  { title: 'WhoAmI' },
);
