// Which run a command acts on when the user did not name one: runs of the active document first,
// newest first, optionally only those in a given state or of a given kernel.
import type { RunSummary } from './protocol';

export interface RunFilter {
  uri?: string;
  kernel?: string;
  statuses?: readonly string[];
  withWinner?: boolean;
}

export function selectRuns(runs: readonly RunSummary[], filter: RunFilter): RunSummary[] {
  const matching = runs.filter(
    (r) =>
      (filter.kernel === undefined || r.kernel === filter.kernel) &&
      (filter.statuses === undefined || filter.statuses.includes(r.status)) &&
      (!filter.withWinner || (typeof r.speedup === 'number' && r.bestValue !== null)),
  );
  const newestFirst = [...matching].sort((a, b) => b.created.localeCompare(a.created));
  if (filter.uri === undefined) {
    return newestFirst;
  }
  // Runs of the active document come first; the others stay reachable through the quick pick.
  const here = newestFirst.filter((r) => sameUri(r.uri, filter.uri as string));
  const elsewhere = newestFirst.filter((r) => !sameUri(r.uri, filter.uri as string));
  return [...here, ...elsewhere];
}

/** file:// URIs as the server and VS Code write them can differ in percent-encoding (e.g. "%3A"). */
export function sameUri(a: string, b: string): boolean {
  return normaliseUri(a) === normaliseUri(b);
}

function normaliseUri(uri: string): string {
  try {
    return decodeURIComponent(uri).replace(/\/+$/, '');
  } catch {
    return uri;
  }
}
