/**
 * `orch serve`: the scheduler service. One leader at a time; a second `serve` stands by and takes
 * over within seconds when the leader dies, re-attaching to the blocks in flight. Runs until
 * SIGINT/SIGTERM (then steps down at once, so a standby takes over without waiting for the TTL).
 */
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

export const serveCommand = defineCommand({
  command: 'serve',
  describe: 'run the scheduler (one leader per Redis; others stand by)',
  builder: (y) =>
    withRedisUrlFile(y)
      .option('leader-ttl', {
        type: 'number',
        default: 3000,
        describe: 'leader lease TTL in ms (takeover time after a crash)',
      })
      .option('http', {
        type: 'number',
        describe: 'also serve the dashboard (orch dashboard) on 127.0.0.1:PORT, behind its token',
      })
      .option('http-token-file', {
        type: 'string',
        describe:
          "the dashboard's token file, as orch dashboard --token-file (default: ORCH_DASHBOARD_TOKEN, else the dashboard's own)",
      })
      .option('http-open-loopback', {
        type: 'boolean',
        default: false,
        describe: 'serve the dashboard without a token (orch dashboard --open-loopback)',
      })
      .option('http-print-token', {
        type: 'boolean',
        default: false,
        describe: "print the dashboard's sign-in URL, its own token in it (orch dashboard --print-token)",
      })
      .option('secret-file', {
        type: 'string',
        describe:
          'file (mode 0600) holding the cluster secret block jobs are signed with (default: $ORCH_CLUSTER_SECRET_FILE, else $ORCH_CLUSTER_SECRET)',
      })
      .option('submit-token-file', {
        type: 'string',
        describe:
          'file (mode 0600) holding the submit token experiments must be signed with (default: $ORCH_SUBMIT_TOKEN_FILE, else $ORCH_SUBMIT_TOKEN)',
      })
      .option('insecure-redis', {
        type: 'boolean',
        default: false,
        describe: 'accept a Redis that answers without a password (only on a network only you reach)',
      }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them (cli/main.ts).
    const { startNightlyWorker } = await import('../../orchestrator/nightly/nightly-processor.ts');
    const { Scheduler } = await import('../../orchestrator/scheduler/scheduler.ts');
    const { orchLog } = await import('../embedded/log.ts');
    const { requireTarget } = await import('../embedded/redis-target.ts');
    const { requireRedisAuth } = await import('../../store/connect.ts');
    const log = orchLog('serve', process.env.ORCH_LOG ?? 'info');
    const target = await requireTarget('serve', log, argv);
    try {
      // the workers run what this Redis holds: refuse one anybody may write to
      await requireRedisAuth(target.redis, target.url, { allowInsecure: argv.insecureRedis, log, who: 'the workers' });
      const { warnIfNotPersistent } = await import('../../store/redis-instance.ts');
      await warnIfNotPersistent(target.redis, log, 'orch serve');
    } finally {
      await target.close();
    }
    const { requireClusterSecret } = await import('../../store/cluster-secret.ts');
    const secret = requireClusterSecret('orch serve', argv.secretFile);
    // before the scheduler starts: a bad token file stops serve before it leads
    const httpToken =
      argv.http === undefined
        ? null
        : await (await import('./dashboard.ts')).resolveDashboardToken({
            tokenFile: argv.httpTokenFile,
            openLoopback: argv.httpOpenLoopback,
          });
    const { requireSubmitToken } = await import('../../store/submit-token.ts');
    // the scheduler acts only on experiments signed with it (orchestrator/scheduler/submit-admission.ts)
    const submitToken = requireSubmitToken('orch serve', argv.submitTokenFile);
    const scheduler = new Scheduler({
      url: target.url,
      prefix: target.prefix,
      log,
      leaderTtlMs: argv.leaderTtl,
      secret,
      submitToken,
    });
    const say = (event: string, extra: Record<string, unknown> = {}) =>
      process.stdout.write(
        argv.json
          ? jsonLine({ event, id: scheduler.lease.id, at: new Date().toISOString(), ...extra })
          : `${new Date().toISOString()} ${event} (${scheduler.lease.id})${extra.why ? `: ${extra.why}` : ''}\n`,
      );
    scheduler.on('leading', () => say('leader'));
    scheduler.on('deposed', (why: string) => say('standby', { why }));
    say('standby');
    scheduler.start();
    // Nightly suite runs (queue `nightly`): every serve consumes; each run is submitted once.
    const nightly = startNightlyWorker({ url: target.url, prefix: target.prefix, log, secret, submitToken });
    // The dashboard runs in a process of its own: its load never delays the lease renewals.
    let dashboard: { close(): Promise<void> } | null = null;
    if (argv.http !== undefined && httpToken !== null) {
      const { describeStart, signInOf } = await import('./dashboard.ts');
      const { startDashboardProcess } = await import('../../orchestrator/dashboard/dashboard-process.ts');
      const child = await startDashboardProcess({
        url: target.url,
        port: argv.http,
        token: httpToken.token,
        results: 'results',
        log,
      });
      dashboard = child;
      const started = {
        dashboard: child,
        tokenFrom: httpToken.from,
        ...signInOf(child.address, httpToken, argv.httpPrintToken),
      };
      say('dashboard', {
        why: describeStart(started),
        address: child.address,
        pid: child.pid,
        open: started.signIn,
        token_file: started.tokenFile,
      });
    }
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await dashboard?.close();
    await nightly.close();
    await scheduler.stop();
    say('stopped');
  },
});
