/**
 * What every name orch turns into a Redis key part, a queue name, a file name or an environment
 * variable may hold: one module, so a spec schema and a sanitizer of the same name never disagree.
 */

/** Spec, arm, toggle and build names, and the experiment ids made of them (`<name>-<time>-<n>`). */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;
/** Host names: a name and '@', never ':' (it separates a card's kind, index and host in card ids and key parts). */
export const HOST_NAME_PATTERN = /^[A-Za-z0-9_.@-]+$/;
/** Card ids: `cpu:0@host`; a host's name after the '@'. */
export const CARD_PATTERN = /^[A-Za-z0-9_.@:-]+$/;
/** An environment variable's name as a POSIX shell and every exec'd program read it. */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
