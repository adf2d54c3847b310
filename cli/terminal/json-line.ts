/**
 * One JSON value as a line for a terminal or a pipe (`--json` output, JSON log lines): the same
 * value JSON.parse reads back, with every character a terminal may act on or reorder written as a
 * \uXXXX escape. JSON.stringify escapes only U+0000-U+001F; a program's or a Redis record's text
 * can also carry C1 controls (U+0080-U+009F: U+009B is CSI to a terminal that takes 8-bit
 * controls), bidirectional overrides and isolates (they reorder what is shown: "Trojan Source")
 * and U+2028/U+2029. These can stand only inside JSON strings, so escaping them in the text keeps
 * the JSON the same value.
 */
const ACTIVE = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `json` (JSON text) with the characters above escaped. */
export function terminalSafeJson(json: string): string {
  return json.replace(ACTIVE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `value` as JSON text (indented by `indent` spaces where given) and a newline, terminal-safe. */
export function jsonLine(value: unknown, indent?: number): string {
  return `${terminalSafeJson(JSON.stringify(value, null, indent))}\n`;
}
