/** A GitHub-flavoured Markdown table; cells are escaped so a `|` in an arm name cannot break it. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const esc = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');
  const line = (cells: readonly string[]) => `| ${cells.map(esc).join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}
