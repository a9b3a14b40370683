// The run report webview: one panel, re-used, showing the chosen run's chart and beam tree.
import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { RUN_REPORT, RunReport } from './protocol';
import { reportHtml } from './reportHtml';
import { SpeedpatchServer } from './server';

export class RunReportPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(private readonly server: SpeedpatchServer) {}

  async show(runId: string): Promise<void> {
    const report = await this.server.request<RunReport>(RUN_REPORT, { runId });
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('speedpatch.report', 'speedpatch report', vscode.ViewColumn.Beside, {
        enableScripts: false,
      });
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = `speedpatch: ${report.run.kernel}`;
    this.panel.webview.html = reportHtml(report, crypto.randomBytes(16).toString('hex'), this.panel.webview.cspSource);
    this.panel.reveal();
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
