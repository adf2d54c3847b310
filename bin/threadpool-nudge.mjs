// A request to libuv's threadpool, posted once a second while another has waited a whole second.
//
// glibc before 2.41 can lose a pthread_cond_signal (sourceware bug 25847; Debian 12 ships 2.36):
// libuv's threadpool then holds a queued request while every one of its threads sleeps, and a
// process that waits on that request alone waits forever. An `orch submit` of the test suite was
// found so 36 minutes after its start: one FSReqPromise pending, one uv__fs_work in libuv's queue,
// its four threads idle on the condition variable (gdb), nothing else to do. Any later request
// signals the condition again, and the thread it wakes drains the queue: an fs.stat posted there
// through the inspector ended the wait at once. So a stat of / is posted whenever a request has
// been pending across a tick: nothing while the process waits on sockets and timers alone, a
// stat a second while file work is slow, and a lost wakeup costs a second instead of the run.
import { stat } from 'node:fs';

/**
 * Requests that run on libuv's threadpool, by process.getActiveResourcesInfo()'s names: fs (callback
 * and promise) and dns.lookup / lookupService. zlib's and crypto's threadpool work is not listed
 * there (node 20: a pending pbkdf2, scrypt, randomBytes or gzip shows no entry), so it is not seen;
 * orch waits on files, which is where the wait was found.
 */
const THREADPOOL_REQUESTS = /^(FSReqCallback|FSReqPromise|GetAddrInfoReqWrap|GetNameInfoReqWrap)$/;

/**
 * Starts the nudge; returns its stop. `pending` counts the threadpool requests now, `post` posts
 * one (both replaced in tests). The timer is unref'd: it never keeps a process alive.
 */
export function startThreadpoolNudge({
  intervalMs = 1000,
  pending = () => process.getActiveResourcesInfo().filter((name) => THREADPOOL_REQUESTS.test(name)).length,
  post = () => stat('/', () => {}),
} = {}) {
  let waitingBefore = false;
  const timer = setInterval(() => {
    const waiting = pending() > 0;
    // pending at two ticks in a row: a request has waited at least a whole interval
    if (waiting && waitingBefore) post();
    waitingBefore = waiting;
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
