/** The one field of orch's package.json that orch reads back: `orch --version` and a run's provenance. */
import { z } from 'zod';

export const PackageJsonSchema = z.object({ version: z.string().min(1) });
export type PackageJson = z.infer<typeof PackageJsonSchema>;
