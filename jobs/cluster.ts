/** A cluster file (`kind: cluster`): the hosts orch may use and how to reach them. */
import { z } from 'zod';
import { NameSchema, strictObject } from './spec-schema/strict-object.ts';

export const HostSchema = strictObject({
  name: NameSchema,
  /**
   * How to reach the host. `host` may be an alias of ~/.ssh/config: its HostName, User, Port,
   * IdentityFile and ProxyJump apply where this entry leaves them out (what is written here
   * wins, as on ssh's command line). Without a key_file or IdentityFile, ssh-agent
   * (SSH_AUTH_SOCK) and ~/.ssh/id_ed25519, id_ecdsa, id_rsa are tried.
   */
  ssh: strictObject({
    host: z.string().min(1),
    port: z.int().min(1).max(65535).optional(),
    user: z.string().min(1).optional(),
    key_file: z.string().min(1).optional(),
    /**
     * The host's public key as `ssh-keyscan` or a host's /etc/ssh/ssh_host_*_key.pub print it
     * (`ssh-ed25519 AAAA…`), trusted besides ~/.ssh/known_hosts; a host whose key is in neither
     * is refused.
     */
    host_key: z
      .string()
      .regex(
        /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,2}( .*)?$/,
        {
          error: 'expected a public key line such as "ssh-ed25519 AAAAC3Nza…" (ssh-keyscan -p PORT HOST prints it)',
        },
      )
      .optional(),
  }),
  /** Card ids (GPU indices or UUIDs) orch may lease on this host; omitted: all it finds. */
  cards: z.array(z.union([z.int().min(0), z.string().min(1)])).optional(),
  /** Where the host's build cache lives. */
  build_dir: z.string().min(1),
  /** Start the worker with --allow-command: it runs command workloads (users' own programs) and builds of commits. */
  allow_command: z.boolean().default(false),
  /**
   * The user command workloads' programs run as (`orch worker --run-as`): omitted, `orch-run` when
   * the ssh user is root (created there), else the ssh user; `none`: the ssh user, root included.
   */
  run_as: z
    .string()
    .regex(/^[a-z_][a-z0-9_-]{0,31}$/, { error: 'expected a user name of the host (e.g. orch-run), or none' })
    .optional(),
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
  redis: strictObject({
    url: z.string().regex(/^rediss?:\/\//, { error: 'expected redis://host:port or rediss://…' }),
  }),
  hosts: z.array(HostSchema).min(1),
});
export type Cluster = z.infer<typeof ClusterSchema>;
