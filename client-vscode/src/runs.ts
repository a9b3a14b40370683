// The extension's view of the server's runs: a full list from speedpatch/runs, kept current by the
// speedpatch/runUpdate notifications. The status bar and the Runs view both read it.
import * as vscode from 'vscode';
import { isRunning, mergeRuns } from './format';
import { Log } from './log';
import { RUNS, RunSummary } from './protocol';
import { SpeedpatchServer } from './server';

export class RunList implements vscode.Disposable {
  private list: RunSummary[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly server: SpeedpatchServer,
    private readonly log: Log,
  ) {
    this.subscriptions = [
      server.onRunUpdate((summary) => this.update(summary)),
      server.onRunsChanged(() => void this.refresh()),
      server.onReadyChange((up) => (up ? void this.refresh() : undefined)),
    ];
  }

  get runs(): readonly RunSummary[] {
    return this.list;
  }

  async refresh(): Promise<void> {
    try {
      this.list = mergeAll(await this.server.request<RunSummary[]>(RUNS, {}));
      this.fire();
    } catch (error) {
      this.log.error('listing runs', error);
    }
  }

  private update(summary: RunSummary): void {
    this.list = mergeRuns(this.list, summary);
    this.fire();
  }

  private fire(): void {
    void vscode.commands.executeCommand('setContext', 'speedpatch.running', this.list.some(isRunning));
    this.changed.fire();
  }

  dispose(): void {
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.changed.dispose();
  }
}

function mergeAll(runs: RunSummary[]): RunSummary[] {
  return runs.reduce<RunSummary[]>((list, run) => mergeRuns(list, run), []);
}
