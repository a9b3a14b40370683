// The extension's Output channel ("speedpatch"): the extension's own lines and the server's stderr.
import * as vscode from 'vscode';

export class Log implements vscode.Disposable {
  readonly channel: vscode.LogOutputChannel;

  constructor() {
    this.channel = vscode.window.createOutputChannel('speedpatch', { log: true });
  }

  info(message: string): void {
    this.channel.info(message);
  }

  error(message: string, error?: unknown): void {
    const detail = error instanceof Error ? `: ${error.message}` : error !== undefined ? `: ${String(error)}` : '';
    this.channel.error(`${message}${detail}`);
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }
}
