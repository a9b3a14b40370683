// Text the extension shows for runs and candidates: speedups, status bar, Runs view rows.
import type { RunSummary } from './protocol';

export function formatSpeedup(speedup: number | null | undefined): string {
  if (speedup === null || speedup === undefined || !Number.isFinite(speedup)) {
    return '–';
  }
  return `${speedup.toFixed(2)}x`;
}

export function formatValue(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined || !Number.isFinite(value)) {
    return '–';
  }
  const shown = Number.isInteger(value) ? value.toLocaleString('en-US') : value.toPrecision(4);
  return unit ? `${shown} ${unit}` : shown;
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

export function statusBarView(runs: readonly RunSummary[]): StatusBarView {
  const running = runs.filter(isRunning);
  const best = bestSpeedup(runs);
  const parts: string[] = [];
  if (running.length > 0) {
    parts.push(`$(sync~spin) ${running.length} running`);
  }
  if (best !== null) {
    parts.push(`best ${formatSpeedup(best)}`);
  }
  const text = `$(rocket) speedpatch${parts.length > 0 ? ': ' + parts.join(', ') : ''}`;
  const lines = running.map((r) => `${r.kernel}: iteration ${r.iteration}/${r.iterations}, best ${formatSpeedup(r.speedup)}`);
  const tooltip = lines.length > 0 ? lines.join('\n') : best !== null ? `Best speedup so far: ${formatSpeedup(best)}` : 'No runs yet';
  return { text, tooltip };
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
    `status: ${run.status}${run.message ? ` — ${run.message}` : ''}`,
    `baseline: ${formatValue(run.baselineValue, run.unit)}`,
    `best: ${formatValue(run.bestValue, run.unit)} (${formatSpeedup(run.speedup)})`,
    `evaluations: ${run.evaluations.correct} correct of ${run.evaluations.total}`,
    `started: ${run.created}`,
  ].join('\n');
}

/** Keeps the newest summary per run id (updates arrive as whole summaries). */
export function mergeRuns(known: readonly RunSummary[], update: RunSummary): RunSummary[] {
  const rest = known.filter((r) => r.runId !== update.runId);
  return [update, ...rest].sort((a, b) => b.created.localeCompare(a.created));
}
