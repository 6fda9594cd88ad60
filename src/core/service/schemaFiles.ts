// The JSON files generated from the engine's schemas (zod, the run settings), by repository path: scripts/gen-derived.mjs writes them,
// test/unit/schemas.test.ts fails when a committed one differs from what the code says.
import { projectJsonSchema } from '../design/projectSchema.js';
import { rewardServiceOpenApi } from './openapi.js';
import { trainingSettings } from '../vocabulary/surfaces.js';

export function generatedSchemaFiles(): Record<string, Record<string, unknown>> {
  return {
    'media/chorus.schema.json': projectJsonSchema(),
    'docs/reward-service.openapi.json': rewardServiceOpenApi(),
    'training/chorus_train/run_settings.json': trainingSettings(),
  };
}
