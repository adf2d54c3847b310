/**
 * The one redaction function: passwords with `/`, `@`, `:`, `%`, `?password=` parameters and
 * user:pass forms never survive; the parts that help a reader (scheme, user, host, port) do.
 * Then the places that printed them: `orch status` on an unreachable Redis, ssh exec timeouts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactText, redactUrl, urlHasPassword } from '../../jobs/redact.ts';
import { freePort } from '../../store/redis-server-process.ts';
import { runOrch } from '../cli/run-orch.ts';

const SECRETS = ['s3cr/et', 'p@ss@word', 'a:b:c', 'pct%40x%2F', 'q?x=1&y', 'plain'];

describe('redactUrl / redactText', () => {
  for (const secret of SECRETS) {
    test(`password ${JSON.stringify(secret.replace(/\w/g, 'x'))}: user:pass, :pass and pass@ forms`, () => {
      for (const url of [
        `redis://alice:${secret}@db.example:6380/2`,
        `redis://:${secret}@127.0.0.1:6379`,
        `rediss://default:${secret}@h:1`,
      ]) {
        const r = redactUrl(url);
        assert.ok(!r.includes(secret), 'the password is masked');
        assert.match(r, /^rediss?:\/\/(alice|default)?:\*\*\*@(db\.example:6380\/2|127\.0\.0\.1:6379|h:1)$/);
      }
      if (!secret.includes(':')) assert.equal(redactUrl(`redis://${secret}@h:1`), 'redis://***@h:1');
    });
  }

  test('query parameters: ?password= and &password= are masked, others kept', () => {
    assert.equal(redactUrl('redis://h:1/0?password=s3cr/et&db=2'), 'redis://h:1/0?password=***&db=2');
    assert.equal(redactUrl('redis://u:p@h:1?name=x&password=a%40b'), 'redis://u:***@h:1?name=x&password=***');
  });

  test('every parameter that names a secret, in URLs and libpq key/value strings: sslpassword too', () => {
    assert.equal(
      redactUrl('postgres://u:pw@db.example/x?sslmode=verify-full&sslpassword=keypass&application_name=a'),
      'postgres://u:***@db.example/x?sslmode=verify-full&sslpassword=***&application_name=a',
    );
    assert.equal(
      redactText("host=db.example user=u password=hunter2 sslpassword='k p' dbname=x"),
      'host=db.example user=u password=*** sslpassword=*** dbname=x',
    );
    assert.equal(redactText('orch worker --password=abc --port 1'), 'orch worker --password=*** --port 1');
    assert.equal(
      redactText('postgres://db.example/x?access_token=t0k&x=1'),
      'postgres://db.example/x?access_token=***&x=1',
    );
    assert.equal(redactText('the password is masked; sslmode=require'), 'the password is masked; sslmode=require');
  });

  test('a URL without credentials is unchanged', () => {
    assert.equal(redactUrl('redis://127.0.0.1:6379'), 'redis://127.0.0.1:6379');
    assert.equal(urlHasPassword('redis://127.0.0.1:6379'), false);
    assert.equal(urlHasPassword('redis://:x@127.0.0.1:6379'), true);
    assert.equal(urlHasPassword('redis://h?password=x'), true);
  });

  test('command lines: URLs inside quotes and env assignments, requirepass, AUTH', () => {
    const line = `REDIS_URL='redis://:p@/ss@h:1' nohup node bin/orch.mjs worker --redis "redis://u:p:w@h:2/0" >log`;
    const r = redactText(line);
    assert.ok(!r.includes('p@/ss') && !r.includes('p:w'), r);
    assert.match(r, /REDIS_URL='redis:\/\/:\*\*\*@h:1' nohup/);
    assert.equal(redactText('redis-server --requirepass hunter2 --port 1'), 'redis-server --requirepass *** --port 1');
    assert.equal(redactText('requirepass "a b"'), 'requirepass ***');
    assert.equal(redactText('AUTH default hunter2'), 'AUTH *** ***');
    assert.equal(redactText('two: redis://:a@h:1 and redis://:b@h:2'), 'two: redis://:***@h:1 and redis://:***@h:2');
  });
});

describe('printed messages carry no password', { timeout: 60_000 }, () => {
  test('orch status on an unreachable Redis names it without its password', async () => {
    const port = await freePort();
    const secret = 'Zq9%2Fx%40y%3Az';
    const r = runOrchEnv(['status'], { REDIS_URL: `redis://alice:${secret}@127.0.0.1:${port}` });
    assert.notEqual(r.status, 0);
    assert.ok(!`${r.stdout}${r.stderr}`.includes('Zq9'), 'no part of the password is printed');
    assert.match(r.stderr, new RegExp(`redis://alice:\\*\\*\\*@127\\.0\\.0\\.1:${port}`));
  });
});

function runOrchEnv(args: string[], env: Record<string, string>) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return runOrch(args);
  } finally {
    for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
    Object.assign(process.env, saved);
  }
}
