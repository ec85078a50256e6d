import { Type } from 'typebox';
import { AnyObject, Name } from './common.js';

export const CapabilityInfo = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    isAgent: Type.Boolean(),
    peers: Type.Array(Type.String()),
    rootTag: Type.String({ description: 'XML root tag of the payload it accepts' }),
  },
  { title: 'CapabilityInfo' },
);

export const CapabilityDetail = Type.Object(
  {
    ...CapabilityInfo.properties,
    payloadClass: Type.String(),
    schemaXsd: Type.String(),
    exampleXml: Type.String(),
    jsonSchema: AnyObject,
  },
  { title: 'CapabilityDetail' },
);

export const CapabilityListResponse = Type.Object({ capabilities: Type.Array(CapabilityInfo), count: Type.Integer() }, { title: 'CapabilityListResponse' });

export const CapabilityParams = Type.Object({ name: Name });
