/**
 * Every environment variable an orch process reads, in one table: `orch --help` prints it and
 * test/cli/environment.test.ts checks that each variable the tree reads from process.env is here and
 * in README.md, so a new variable cannot stay undocumented.
 */
export interface EnvVar {
  name: string;
  /** one or more lines, each under 76 characters */
  describe: string;
}

export const ENVIRONMENT: readonly EnvVar[] = [
  {
    name: 'REDIS_URL',
    describe:
      "the cluster's Redis; unset, orch submit runs embedded (a private\nredis-server that lives as long as the command)",
  },
  {
    name: 'ORCH_PREFIX',
    describe:
      'key prefix in that Redis (default orch); every process of a cluster\nuses the same one (orch worker --prefix; orch hosts up passes it on)',
  },
  { name: 'ORCH_LOG', describe: 'log level (default warn; info for serve and worker)' },
  {
    name: 'ORCH_LOG_FORMAT',
    describe: 'json or pretty: log lines on stderr (default pretty on a terminal,\njson elsewhere)',
  },
  {
    name: 'ORCH_BUILD_DIR',
    describe: 'build cache of command workloads (default ~/.cache/orch/builds; as root /var/cache/orch/builds)',
  },
  { name: 'ORCH_GRAPHRT', describe: 'embedded submit: the graphrt binary (default native/build/graphrt)' },
  {
    name: 'ORCH_INJECT_LIB',
    describe:
      "orch's CUPTI injection library for command ranks on cuda cards:\nlaunch counts and the trace probe (default liborch_inject.so beside graphrt)",
  },
  {
    name: 'ORCH_EXPERIMENT_TTL_DAYS',
    describe:
      "days Redis keeps an ended experiment's keys after its results are\nwritten (default 7; 0: until orch prune)",
  },
  {
    name: 'GITHUB_STEP_SUMMARY',
    describe: 'orch report --format github: the file its markdown summary is\nappended to (set by GitHub Actions)',
  },
  {
    name: 'SLURM_JOB_ID',
    describe:
      'orch worker --slurm auto: set, the worker runs inside that Slurm job\n(its cards, host name and end from the job)',
  },
  {
    name: 'SLURM_JOB_END_TIME',
    describe:
      "orch worker under Slurm: the allocation's end (epoch seconds), where\nSlurm sets it; else read with squeue",
  },
  {
    name: 'ORCH_CPU_CARDS',
    describe:
      'embedded submit: how many cpu cards the local worker offers; set, it\nlets a spec with more ranks than cores run (with a warning: its timings mean nothing)',
  },
  { name: 'ORCH_REDIS_SERVER', describe: 'embedded submit: the redis-server binary (default: from PATH)' },
  { name: 'ORCH_VALIDATE_STATS', describe: '1: orch validate prints time and peak memory per file on stderr' },
  { name: 'ORCH_FROM_SOURCE', describe: '1: run the TypeScript sources through tsx even when dist/ is fresh' },
  {
    name: 'XDG_RUNTIME_DIR',
    describe: 'orch worker: its private state dir is $XDG_RUNTIME_DIR/orch\n(default ~/.cache/orch)',
  },
  {
    name: 'PATH',
    describe:
      "orch worker: where flock, setpriv, git and nvidia-smi are found, read\nonce at start (a spec's env PATH reaches only the user's program)",
  },
  { name: 'USER', describe: 'named in the refusal of a Redis without a password' },
  { name: 'HOME', describe: 'nightly provenance: expands ~/ in a build directory' },
  {
    name: 'ORCH_CLUSTER_SECRET',
    describe:
      'the cluster secret that signs block jobs (orch serve, orch worker;\nor ORCH_CLUSTER_SECRET_FILE); never stored in Redis',
  },
  { name: 'ORCH_CLUSTER_SECRET_FILE', describe: 'a 0600 file holding the cluster secret (as --secret-file)' },
  {
    name: 'ORCH_SUBMIT_TOKEN',
    describe:
      'the submit token orch submit signs experiments with and orch serve\nchecks (or ORCH_SUBMIT_TOKEN_FILE); never stored in Redis',
  },
  { name: 'ORCH_SUBMIT_TOKEN_FILE', describe: 'a 0600 file holding the submit token (as --submit-token-file)' },
  {
    name: 'ORCH_RANK_ENV',
    describe:
      'orch worker: more variables its ranks and builds get (comma list,\nNAME* for a prefix); never a credential',
  },
  {
    name: 'ORCH_ADVERTISE_ADDR',
    describe:
      "orch worker: the address rank 0 of a gang across hosts listens on\n(default: under Slurm the node's NodeAddr, else the first non-internal IPv4 address)",
  },
  { name: 'ORCH_DB_URL', describe: 'nightly history in PostgreSQL (postgres://...); unset, SQLite' },
  { name: 'ORCH_HISTORY_DB', describe: 'the SQLite history file (default $XDG_DATA_HOME/orch/history.sqlite)' },
  { name: 'XDG_DATA_HOME', describe: 'where the SQLite history lives (default ~/.local/share)' },
  {
    name: 'ORCH_ALERT_DIR',
    describe: "orch serve: directories (:-separated) nightly alert files may be in\nbesides each suite's results root",
  },
  { name: 'ORCH_ALERT_WEBHOOK', describe: 'nightly alerts: a webhook URL (JSON with a Slack-style text field)' },
  {
    name: 'ORCH_DASHBOARD_TOKEN',
    describe: 'orch dashboard: the token every page needs off loopback and cancel\nalways needs',
  },
  { name: 'SSH_AUTH_SOCK', describe: "orch hosts: ssh-agent's keys are offered too" },
  { name: 'CHAOS_SIZE', describe: 'npm test / npm run chaos: ci (reduced) or full' },
  { name: 'CHAOS_ONLY', describe: 'npm run chaos: run only the scenarios whose name holds this text' },
  { name: 'GRAPHRT_CUDA', describe: 'npm run build: ON, OFF or AUTO (default): build the CUDA backend' },
];

/** The "Environment:" section of `orch --help`. */
export function environmentHelp(): string {
  const width = Math.max(...ENVIRONMENT.map((v) => v.name.length)) + 2;
  const lines = ENVIRONMENT.flatMap((v) =>
    v.describe.split('\n').map((d, i) => `  ${(i === 0 ? v.name : '').padEnd(width)}${d}`),
  );
  return ['Environment:', ...lines].join('\n');
}
