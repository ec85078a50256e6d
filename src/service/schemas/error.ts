import { Type, type Static } from 'typebox';

/** Every error the service answers with. `detail` is the operator-facing text. */
export const ErrorBody = Type.Object(
  {
    detail: Type.String(),
    code: Type.String({ description: 'Stable machine-readable code (see src/errors/catalogue.ts)' }),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          location: Type.String({ description: 'querystring, params, body or payload' }),
          field: Type.String(),
          message: Type.String(),
        }),
      ),
    ),
  },
  { title: 'ErrorBody' },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** Error responses every route may give (4XX and 5XX in the OpenAPI document). */
export const errorResponses = {
  '4xx': ErrorBody,
  '5xx': ErrorBody,
} as const;
