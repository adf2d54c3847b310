/** A cluster file (`kind: cluster`): the hosts orch may use and how to reach them. */
import { z } from 'zod';
import { NameSchema, strictObject } from './spec/strict-object.ts';

export const HostSchema = strictObject({
  name: NameSchema,
  ssh: strictObject({
    host: z.string().min(1),
    port: z.int().min(1).max(65535).default(22),
    user: z.string().min(1),
    key_file: z.string().min(1),
  }),
  /** Card ids (GPU indices or UUIDs) orch may lease on this host; omitted: all it finds. */
  cards: z.array(z.union([z.int().min(0), z.string().min(1)])).optional(),
  /** Where the host's build cache lives. */
  build_dir: z.string().min(1),
  /** The orch checkout on the host (`orch hosts up` runs `<node> bin/orch.mjs worker` there); `~/` is the ssh user's home. */
  repo_dir: z.string().min(1).default('~/orch'),
  /** The node binary on the host (Node 20+). */
  node: z.string().min(1).default('node'),
  /**
   * Where `orch hosts up` keeps the worker's pid file and log on the host; it must be a directory
   * of the ssh user that nobody else can write. Omitted: `$XDG_RUNTIME_DIR/orch`, else
   * `~/.orch/run`, resolved on the host.
   */
  run_dir: z.string().min(1).optional(),
});
export type Host = z.infer<typeof HostSchema>;

export const ClusterSchema = strictObject({
  kind: z.literal('cluster'),
  name: NameSchema.default('cluster'),
  redis: strictObject({ url: z.string().regex(/^rediss?:\/\//, { error: 'expected redis://host:port or rediss://…' }) }),
  hosts: z.array(HostSchema).min(1),
});
export type Cluster = z.infer<typeof ClusterSchema>;
