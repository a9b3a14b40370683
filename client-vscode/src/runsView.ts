// The "speedpatch runs" tree: one item per run (kernel, status, best speedup) with its measured
// candidates underneath; clicking a candidate opens its diff.
import * as vscode from 'vscode';
import { formatSpeedup, formatValue, runContext, runDescription, runLabel, runTooltip } from './format';
import { Log } from './log';
import { ReportCandidate, RUN_REPORT, RunReport, RunSummary } from './protocol';
import { compareValues } from './reportHtml';
import { RunList } from './runs';
import { SpeedpatchServer } from './server';

export type RunsNode =
  | { kind: 'run'; run: RunSummary }
  | { kind: 'candidate'; run: RunSummary; candidate: ReportCandidate }
  | { kind: 'note'; run: RunSummary; text: string; tooltip: string };

function statusIcon(status: string): vscode.ThemeIcon {
  const icons: Record<string, string> = {
    queued: 'watch',
    running: 'sync~spin',
    finished: 'pass',
    cancelled: 'circle-slash',
    failed: 'error',
    interrupted: 'debug-pause',
  };
  return new vscode.ThemeIcon(icons[status] ?? 'circle-outline');
}

/** Measured candidates fastest first, then the failed ones, so the useful rows are on top. */
export function orderCandidates(candidates: readonly ReportCandidate[]): ReportCandidate[] {
  const rank = (c: ReportCandidate): number => (c.status === 'ok' && typeof c.value === 'number' ? c.value : Infinity);
  return [...candidates].sort((a, b) => compareValues(rank(a), rank(b)) || a.iteration - b.iteration);
}

/** Several workspace folders are open: runs are labelled with theirs. */
export function multiRoot(): boolean {
  return (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
}

export class RunsView implements vscode.TreeDataProvider<RunsNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly runs: RunList,
    private readonly server: SpeedpatchServer,
    private readonly log: Log,
  ) {
    this.subscription = runs.onDidChange(() => this.changed.fire(undefined));
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    if (node.kind === 'run') {
      const run = node.run;
      const item = new vscode.TreeItem(runLabel(run), vscode.TreeItemCollapsibleState.Collapsed);
      item.id = run.runId;
      item.description = runDescription(run, multiRoot());
      item.tooltip = runTooltip(run);
      item.iconPath = statusIcon(run.status);
      // the inline actions that fit the run's state (package.json: view/item/context)
      item.contextValue = runContext(run);
      return item;
    }
    if (node.kind === 'note') {
      // a line of explanation under a run ("3 of 12 candidates failed: ..."), not a candidate
      const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
      item.id = `${node.run.runId}/note`;
      item.tooltip = node.tooltip;
      item.iconPath = new vscode.ThemeIcon('info');
      item.contextValue = 'note';
      return item;
    }
    const c = node.candidate;
    const baseline = node.run.baselineValue;
    const speedup = c.status === 'ok' && typeof c.value === 'number' && c.value > 0 && baseline ? baseline / c.value : null;
    const label = c.status === 'ok' ? `${formatValue(c.value, c.unit)} (${formatSpeedup(speedup)})` : c.status;
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = `${node.run.runId}/${c.id}`;
    item.description = c.parentId ? `it ${c.iteration}: ${c.plan.split('\n')[0]}` : 'baseline';
    const why = c.status !== 'ok' && c.message ? `\n\nwhy: ${c.message}` : '';
    item.tooltip = `${c.id} (iteration ${c.iteration}${c.model ? `, ${c.model}` : ''})\n\n${c.plan || 'baseline'}${why}`;
    item.iconPath = new vscode.ThemeIcon(c.status === 'ok' ? 'symbol-event' : 'warning');
    item.contextValue = 'candidate';
    item.command = {
      command: 'speedpatch.client.showDiff',
      title: 'Show diff',
      arguments: [{ runId: node.run.runId, candidateId: c.id }],
    };
    return item;
  }

  async getChildren(node?: RunsNode): Promise<RunsNode[]> {
    if (!node) {
      return this.runs.runs.map((run) => ({ kind: 'run', run }));
    }
    if (node.kind !== 'run') {
      return [];
    }
    try {
      const report = await this.server.request<RunReport>(RUN_REPORT, { runId: node.run.runId });
      const rows: RunsNode[] = orderCandidates(report.candidates).map((candidate) => ({ kind: 'candidate', run: node.run, candidate }));
      const failures = report.failures;
      if (failures && failures.failed > 0) {
        const tooltip = failures.byStatus.map((k) => `${k.count} ${k.label}: ${k.meaning}${k.example ? `\n  e.g. ${k.example}` : ''}`).join('\n');
        rows.unshift({ kind: 'note', run: node.run, text: failures.text, tooltip });
      }
      return rows;
    } catch (error) {
      this.log.error(`loading candidates of run ${node.run.runId}`, error);
      return [];
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
