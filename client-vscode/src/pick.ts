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

export interface OptimizeArgs {
  uri: string;
  kernel: string;
  quick?: boolean;
}

export interface OptimizeOffer {
  title: string;
  args: OptimizeArgs;
}

/** The shape shared by vscode.Command and LSP commands. */
export interface CommandLike {
  title: string;
  command: string;
  arguments?: unknown[];
}

/**
 * The server's "speedpatch.optimize" commands among code action / code lens commands, one per title.
 * The full search is what "Optimize kernel at cursor" means: "(quick)" variants are kept only when
 * nothing else is offered (they stay in the code action menu anyway).
 */
export function optimizeOffers(commands: readonly (CommandLike | undefined)[]): OptimizeOffer[] {
  const offers: OptimizeOffer[] = [];
  for (const command of commands) {
    const args = command?.arguments?.[0] as OptimizeArgs | undefined;
    if (command?.command === 'speedpatch.optimize' && args?.kernel && !offers.some((o) => o.title === command.title)) {
      offers.push({ title: command.title, args });
    }
  }
  const full = offers.filter((o) => !o.args.quick);
  return full.length > 0 ? full : offers;
}

/** Why "Optimize kernel at cursor" found nothing: the server's reasons (its diagnostics) when it gave some. */
export function noKernelMessage(reasons: readonly string[], file: string): string {
  if (reasons.length > 0) {
    return reasons[0].startsWith('speedpatch') ? reasons[0] : `speedpatch: ${reasons[0]}`;
  }
  return `speedpatch: no kernel to optimize in ${file} (none found, or its search is already running).`;
}
