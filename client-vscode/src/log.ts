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
    this.channel.error(error === undefined ? message : `${message}: ${describeError(error)}`);
  }

  show(): void {
    this.channel.show(true);
  }

  dispose(): void {
    this.channel.dispose();
  }
}

/** An error in words: an Error's message, a value that is not an object as String() writes it, any other
 * object as JSON (String() would write '[object Object]'). */
function describeError(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error !== 'object' || error === null) {
    return String(error);
  }
  try {
    return JSON.stringify(error);
  } catch {
    return Object.prototype.toString.call(error);  // a cycle: no better words than String()'s
  }
}
