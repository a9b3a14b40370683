// Status bar item: how many searches are running, and the best speedup found for the active editor's file;
// click shows the runs.
import * as vscode from 'vscode';
import { statusBarView } from './format';
import { RunList } from './runs';

export class RunStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly runs: RunList) {
    this.item = vscode.window.createStatusBarItem('speedpatch.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'speedpatch';
    this.item.command = 'speedpatch.client.showRuns';
    this.subscription = vscode.Disposable.from(
      runs.onDidChange(() => this.render()),
      vscode.window.onDidChangeActiveTextEditor(() => this.render()),
    );
    this.render();
    this.item.show();
  }

  private render(): void {
    const view = statusBarView(this.runs.runs, vscode.window.activeTextEditor?.document.uri.toString());
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
