/**
 * A worker whose programs run as its own user warns of the credential files it leaves on disk
 * (worker/credential-files.ts): they could read them as the worker does. Unlinked files, a run-as
 * user or a worker that runs no user's code leave nothing to say.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentialFilesLeft } from '../../worker/credential-files.ts';

const files = [
  { how: '--redis-url-file', path: '/run/u/url' },
  { how: '--secret-file', path: '/run/u/secret' },
  { how: 'ORCH_CLUSTER_SECRET_FILE', path: undefined },
];

test('credential files left readable to programs of the worker’s own user are named, with the fixes', () => {
  const warn = credentialFilesLeft({ ownUserPrograms: true, unlinked: false, files });
  assert.match(
    warn ?? '',
    /^--redis-url-file \/run\/u\/url, --secret-file \/run\/u\/secret: left on disk, readable by this worker's user, .*--unlink-credential-files.*orch-run$/,
  );
  assert.equal(credentialFilesLeft({ ownUserPrograms: true, unlinked: true, files }), null, 'removed once read');
  assert.equal(credentialFilesLeft({ ownUserPrograms: false, unlinked: false, files }), null, 'another user, or none');
  // the variable's file is never removed: --unlink-credential-files removes the flags' files only
  assert.match(
    credentialFilesLeft({
      ownUserPrograms: true,
      unlinked: true,
      files: [{ how: 'ORCH_CLUSTER_SECRET_FILE', path: '/etc/orch/secret' }],
    }) ?? '',
    /^ORCH_CLUSTER_SECRET_FILE \/etc\/orch\/secret: left on disk/,
  );
});
