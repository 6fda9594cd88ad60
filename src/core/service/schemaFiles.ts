// The files generated from zod schemas, by repository path: scripts/gen-schemas.mjs writes them,
// test/unit/schemas.test.ts fails when a committed one differs from what the code says.
import { projectJsonSchema } from '../design/projectSchema.js';
import { rewardServiceOpenApi } from './openapi.js';

export function generatedSchemaFiles(): Record<string, Record<string, unknown>> {
  return {
    'media/chorus.schema.json': projectJsonSchema(),
    'docs/reward-service.openapi.json': rewardServiceOpenApi(),
  };
}
