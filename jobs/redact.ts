/**
 * The one redaction of secrets in text orch prints or logs: Redis URLs (`redis://user:pass@host`,
 * `rediss://…`, `?password=…`), `requirepass …` and `AUTH …` in command lines. Every URL, command
 * line and error message that can carry a Redis URL goes through `redactUrl` or `redactText`
 * before it reaches stdout, stderr, a log line or an error.
 *
 * Over-redacting is the safe side: a password may hold `/`, `@`, `:`, `%`, `?`, so the user
 * info is taken up to the LAST `@` of the URL token (a token ends at whitespace), not the first.
 */

const MASK = '***';

/** `scheme://` of a URL that may carry credentials. */
const URL_START = /\b([a-z][a-z0-9+.-]*):\/\//gi;
/**
 * Query parameters that carry a secret: any name that ends in one of these words, so libpq's
 * `sslpassword=` (the client key's passphrase) and `access_token=` are masked with `password=`.
 */
const SECRET_NAME = '[a-z_]*(?:password|passwd|pass|pwd|auth|token|secret)';
const SECRET_PARAM = new RegExp(`([?&;]${SECRET_NAME}=)[^&#\\s'"]*`, 'gi');
/**
 * `name=value` words outside a URL that carry a secret: libpq's key/value connection strings
 * (`host=db password=x sslpassword=y`, quoted values included) and `--password=x` flags.
 */
const SECRET_ASSIGNMENT = new RegExp(
  `(^|[\\s;,(])(-{0,2}${SECRET_NAME}\\s*=\\s*)(?:'(?:[^'\\\\]|\\\\.)*'|"[^"]*"|[^\\s;,)]+)`,
  'gi',
);
/** secrets as separate words of a command line or config */
const SECRET_WORD =
  /\b(requirepass|masterauth|--requirepass|--pass|--password|AUTH)(\s+|=)(?:'[^']*'|"[^"]*"|\S+)((?:\s+)(?:'[^']*'|"[^"]*"|[^\s-]\S*))?/g;

/** The URL (or a text that starts with one) with its password and secret parameters masked. */
export function redactUrl(url: string): string {
  return redactText(url);
}

/** Every URL's credentials and every secret word in `text`, masked. */
export function redactText(text: string): string {
  let out = '';
  let last = 0;
  URL_START.lastIndex = 0;
  for (let m = URL_START.exec(text); m; m = URL_START.exec(text)) {
    const start = m.index + m[0].length;
    let end = start;
    while (end < text.length && !/\s/.test(text[end]!)) end++;
    const token = text.slice(start, end);
    const at = token.lastIndexOf('@');
    out += text.slice(last, start);
    if (at >= 0) {
      const info = token.slice(0, at);
      const colon = info.indexOf(':');
      // `user:pass@` keeps the user; a lone word before `@` may be a password (Redis' `redis://pass@host`)
      out += colon >= 0 ? `${info.slice(0, colon)}:${MASK}@` : `${MASK}@`;
      out += token.slice(at + 1).replace(SECRET_PARAM, `$1${MASK}`);
    } else {
      out += token.replace(SECRET_PARAM, `$1${MASK}`);
    }
    last = end;
    URL_START.lastIndex = end;
  }
  out += text.slice(last);
  return maskAssignments(out).replace(
    SECRET_WORD,
    (_all, word: string, sep: string, second: string | undefined) =>
      // `AUTH user pass`: both words may be secret; `AUTH pass`: one
      `${word}${sep}${MASK}${second !== undefined && word === 'AUTH' ? ` ${MASK}` : (second ?? '')}`,
  );
}

/** Secret `name=value` words outside URLs (a URL's parameters are masked already: `***` stays). */
function maskAssignments(text: string): string {
  return text.replace(SECRET_ASSIGNMENT, (all, lead: string, name: string) =>
    all.endsWith(MASK) ? all : `${lead}${name}${MASK}`,
  );
}

/** Whether a Redis URL carries a password (user info or a `password=` parameter). */
export function urlHasPassword(url: string): boolean {
  return redactUrl(url) !== url;
}
