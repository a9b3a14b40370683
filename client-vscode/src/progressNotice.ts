// A progress notification for each search this window's server runs, with a Cancel button. The server's
// own work-done progress shows only in the status bar (vscode-languageclient puts server-initiated
// progress there), where a search of minutes goes unnoticed. Fed by the speedpatch/runUpdate summaries,
// with the elapsed time ticking between them.
import * as vscode from 'vscode';
import { LIVE_STATUSES, progressMessage, progressPercent } from './format';
import { Log } from './log';
import { RunSummary } from './protocol';
import { SpeedpatchServer } from './server';

interface Notice {
  latest: RunSummary;
  end: () => void;
}

export class ProgressNotices implements vscode.Disposable {
  private readonly open = new Map<string, Notice>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly server: SpeedpatchServer,
    private readonly log: Log,
  ) {
    this.subscriptions = [
      server.onRunUpdate((run) => this.update(run)),
      // a server that stopped sends no end: its searches are over (stored, resumable)
      server.onReadyChange((up) => (up ? undefined : this.endAll())),
    ];
  }

  private update(run: RunSummary): void {
    const notice = this.open.get(run.runId);
    if (!LIVE_STATUSES.includes(run.status)) {
      notice?.end();
    } else if (notice) {
      notice.latest = run;
    } else {
      this.begin(run);
    }
  }

  private begin(run: RunSummary): void {
    const started = Date.now();
    const options = { location: vscode.ProgressLocation.Notification, title: `speedpatch: optimizing ${run.kernel}`, cancellable: true };
    void vscode.window.withProgress(options, (progress, token) => {
      return new Promise<void>((resolve) => {
        let shown = 0; // percent reported so far (progress.report takes increments)
        const notice: Notice = { latest: run, end: () => undefined };
        const tick = (): void => {
          const percent = progressPercent(notice.latest);
          progress.report({ message: progressMessage(notice.latest, (Date.now() - started) / 1000), increment: Math.max(percent - shown, 0) });
          shown = Math.max(percent, shown);
        };
        const timer = setInterval(tick, 1000);
        notice.end = () => {
          clearInterval(timer);
          this.open.delete(run.runId);
          resolve();
        };
        token.onCancellationRequested(() => {
          this.server
            .executeCommand('speedpatch.cancel', [{ runId: run.runId }])
            .catch((error) => this.log.error(`cancelling ${run.runId}`, error));
        });
        this.open.set(run.runId, notice);
        tick();
      });
    });
  }

  private endAll(): void {
    [...this.open.values()].forEach((notice) => notice.end());
  }

  dispose(): void {
    this.endAll();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
  }
}
