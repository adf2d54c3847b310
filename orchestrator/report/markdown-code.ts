/**
 * Text as an inline code span of report.md: Markdown shows what is inside as it is, never as a
 * link, an image, emphasis or HTML, so a program's message (`![x](https://attacker/p.png)`) is
 * read, not rendered. The fence is one backtick longer than the longest run of backticks in the
 * text, so no text can end the span; text that starts or ends with a backtick, or with a space at
 * both ends, is padded with a space each side (CommonMark strips one each side). `text` must be
 * one line, as escapeRankText's output is (jobs/rank-text.ts): a span ends at a blank line.
 */
export function markdownCode(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const pad = text === '' || /^`|`$/.test(text) || (text.startsWith(' ') && text.endsWith(' ')) ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/**
 * The characters that open a link, an image or raw HTML, and a backslash before one of them (which
 * would otherwise escape the escape).
 */
const LINK_OR_HTML = /\\(?=[[\]<])|[[\]<]/g;

/**
 * Text as running prose of report.md that fetches and links nothing: each `[`, `]` and `<` is
 * backslash-escaped (CommonMark renders `\[` as `[`), so a reason that quotes a program's message
 * (`![x](https://attacker.example/p.png)`, `<img src=…>`) shows as it was written instead of an
 * image that calls out or HTML. Emphasis and the like are left: they change how a reason looks,
 * never what the page does, and escaping them would make the raw report.md hard to read. `|` is
 * left to markdownTable, which escapes it in a cell.
 */
export function markdownText(text: string): string {
  return text.replace(LINK_OR_HTML, (c) => `\\${c}`);
}
