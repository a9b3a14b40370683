// Text the extension shows for runs and candidates: speedups, status bar, Runs view rows.
import { sameUri } from './pick';
import type { RunSummary } from './protocol';

export function formatSpeedup(speedup: number | null | undefined): string {
  if (speedup === null || speedup === undefined || !Number.isFinite(speedup)) {
    return '–';
  }
  return `${speedup.toFixed(2)}x`;
}

/** Units as backends report them -> as people read them (the server's speedpatch.figures.UNIT_TEXT). */
const UNIT_TEXT: Record<string, string> = { us: 'µs' };

/** '12,345 cycles', '0.1235 ms', '12.5 µs': the server's rule (speedpatch.figures.value_text), so a figure
 * reads the same in the lens and in the Runs view (a fractional value over 1,000 is whole, not 1.235e+4). */
export function formatValue(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '–';
  }
  const whole = Number.isInteger(value) || Math.abs(value) >= 1000;
  const shown = whole ? Math.round(value).toLocaleString('en-US') : String(Number(value.toPrecision(4)));
  const named = UNIT_TEXT[unit] ?? unit;
  return named ? `${shown} ${named}` : shown;
}

/** Statuses of a search that is not over yet. */
export const LIVE_STATUSES: readonly string[] = ['queued', 'running'];

/** '12 s', '3 min 05 s': how long a search has run (the server's progress says it the same way). */
export function elapsedText(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** The progress notification's line: 'iteration 1 of 2, best 1.24x, 3 of 12 candidates failed, 12 s so far'. */
export function progressMessage(run: RunSummary, seconds: number): string {
  if (run.status === 'queued') {
    return `queued behind another search, ${elapsedText(seconds)} so far`;
  }
  const parts = [run.iteration ? `iteration ${run.iteration} of ${run.iterations}` : 'measuring the original'];
  if (typeof run.speedup === 'number' && run.speedup > 1) {
    parts.push(`best ${formatSpeedup(run.speedup)}`);
  }
  if (run.failures && run.failures.failed > 0) {
    parts.push(`${run.failures.failed} of ${run.failures.evaluated} candidates failed`);
  }
  parts.push(`${elapsedText(seconds)} so far`);
  return parts.join(', ');
}

/** How far the search is, 0-100: iterations done of the run's iterations. */
export function progressPercent(run: RunSummary): number {
  return run.iterations > 0 ? Math.min(100, (100 * Math.max(run.iteration - 1, 0)) / run.iterations) : 0;
}

export function isRunning(run: RunSummary): boolean {
  return run.status === 'running';
}

/** Best speedup over the runs that have a correct winner, or null. */
export function bestSpeedup(runs: readonly RunSummary[]): number | null {
  const speedups = runs.map((r) => r.speedup).filter((s): s is number => typeof s === 'number' && Number.isFinite(s));
  return speedups.length > 0 ? Math.max(...speedups) : null;
}

export interface StatusBarView {
  text: string;
  tooltip: string;
}

/**
 * The status bar: searches running anywhere, and the best speedup of the active editor's file (a best
 * speedup of some other file says nothing about the code in front of the user).
 */
export function statusBarView(runs: readonly RunSummary[], activeUri?: string): StatusBarView {
  const running = runs.filter(isRunning);
  const here = activeUri === undefined ? [] : runs.filter((r) => sameUri(r.uri, activeUri));
  const best = bestSpeedup(here);
  const parts: string[] = [];
  if (running.length > 0) {
    parts.push(`$(sync~spin) ${running.length} running`);
  }
  if (best !== null) {
    parts.push(`best ${formatSpeedup(best)}`);
  }
  const text = `$(rocket) speedpatch${parts.length > 0 ? ': ' + parts.join(', ') : ''}`;
  const lines = running.map((r) => `${r.kernel} (${fileName(r.uri)}): iteration ${r.iteration}/${r.iterations}, best ${formatSpeedup(r.speedup)}`);
  if (best !== null && activeUri !== undefined) {
    lines.push(`Best speedup found for ${fileName(activeUri)}: ${formatSpeedup(best)}`);
  }
  const tooltip = lines.length > 0 ? lines.join('\n') : 'No run for this file yet';
  return { text, tooltip };
}

/** The last path segment of a file URI ("matmul.c"). */
export function fileName(uri: string): string {
  const path = uri.replace(/[?#].*$/, '');
  const last = path.slice(path.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last) || uri;
  } catch {
    return last || uri;
  }
}

/** A Runs view row: the kernel, its file and its speedup ("matmul · matmul.c · 2.50x"). */
export function runLabel(run: RunSummary): string {
  return `${run.kernel} · ${fileName(run.uri)} · ${formatSpeedup(run.speedup)}`;
}

/** "3 min ago", "yesterday 14:05", "2026-11-28 09:12": when a run started, readable at a glance. */
export function startedText(created: string, now: Date): string {
  const when = new Date(created);
  if (Number.isNaN(when.getTime())) {
    return created;
  }
  const seconds = Math.max(0, (now.getTime() - when.getTime()) / 1000);
  if (seconds < 60) {
    return 'just now';
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())} ${pad(when.getHours())}:${pad(when.getMinutes())}`;
}

/** One-line description of a run for the Runs view and quick picks. */
/** One line about a run; with showFolder (a multi-root workspace) it names the run's workspace folder. */
export function runDescription(run: RunSummary, showFolder = false): string {
  const progress = isRunning(run) ? `iteration ${run.iteration}/${run.iterations}` : run.status;
  const evals = `${run.evaluations.correct}/${run.evaluations.total} correct`;
  const folder = showFolder && run.folder ? ` · ${run.folder}` : '';
  const executor = run.executor && run.executor !== 'local' ? ` on ${run.executor}` : '';
  return `${progress} · ${formatSpeedup(run.speedup)} · ${evals} · ${run.backend}${executor}${folder}`;
}

export function runTooltip(run: RunSummary): string {
  return [
    `${run.kernel} (${run.target}, ${run.backend})`,
    `evaluated on: ${run.executor === 'ray' ? 'the Ray cluster' : 'this machine'}`,
    ...(run.folder ? [`folder: ${run.folder}`] : []),
    `status: ${statusText(run)}`,
    `baseline: ${formatValue(run.baselineValue, run.unit)}`,
    `best: ${formatValue(run.bestValue, run.unit)} (${formatSpeedup(run.speedup)})`,
    `evaluations: ${run.evaluations.correct} correct of ${run.evaluations.total}`,
    ...(run.failures?.text ? [run.failures.text] : []),
    `started: ${startedText(run.created, new Date())} (${run.created})`,
  ].join('\n');
}

/** The Runs view's context value of a run: 'run' plus what can be done with it ('run running', 'run winner'). */
export function runContext(run: RunSummary): string {
  const parts = ['run'];
  if (run.status === 'running' || run.status === 'queued') {
    parts.push('running');
  }
  if (typeof run.speedup === 'number' && run.speedup > 1 && run.bestValue !== null && !run.stale) {
    parts.push('winner');
  }
  return parts.join(' ');
}

/** The status with the server's message, unless the message only repeats it ("cancelled — cancelled"). */
export function statusText(run: RunSummary): string {
  const message = run.message.trim();
  if (!message || message.toLowerCase() === run.status || message.toLowerCase().startsWith(`${run.status};`)) {
    return run.status;
  }
  return `${run.status} — ${message}`;
}

/** Keeps the newest summary per run id (updates arrive as whole summaries). */
export function mergeRuns(known: readonly RunSummary[], update: RunSummary): RunSummary[] {
  const rest = known.filter((r) => r.runId !== update.runId);
  return [update, ...rest].sort((a, b) => b.created.localeCompare(a.created));
}
