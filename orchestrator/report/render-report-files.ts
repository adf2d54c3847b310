/**
 * Every report file of a results directory, from its analysis and the tables of its committed
 * records (record-tables.ts): report.md (with the ranks of a multi-rank experiment
 * and the busy share of the cards), report.json, one CSV per table, the SVG plots. The writer of
 * results and `orch report --from` both render through here, so a rebuilt directory is byte for
 * byte what the run wrote.
 */

import type { Analysis } from '../stats/types.ts';
import type { RecordTables } from './record-tables.ts';
import { renderBusyShare } from './render-busy-share.ts';
import { renderCsv } from './render-csv.ts';
import { renderJson } from './render-json.ts';
import { renderLaunches } from './render-launches.ts';
import { renderMarkdown } from './render-markdown.ts';
import { renderPlots } from './render-plots.ts';
import { renderRanks } from './render-ranks.ts';

/** file name → content; report.md first. */
export function renderReportFiles(analysis: Analysis, events: RecordTables): Record<string, string> {
  const files: Record<string, string> = {
    'report.md':
      renderMarkdown(analysis) +
      renderRanks(events.ranks) +
      renderLaunches(events.launches) +
      renderBusyShare(events.busy),
    'report.json': renderJson(analysis),
  };
  for (const [table, csv] of Object.entries(renderCsv(analysis))) files[`${table}.csv`] = csv;
  for (const [file, svg] of Object.entries(renderPlots(analysis))) files[file] = svg;
  return files;
}
