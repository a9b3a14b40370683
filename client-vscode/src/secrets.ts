// The LLM API key lives only in VS Code's SecretStorage; it reaches the server in memory
// (initializationOptions and didChangeConfiguration), never in settings, logs or workspace files.
import * as vscode from 'vscode';

const KEY = 'speedpatch.llm.apiKey';

export class ApiKeyStore implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;
  /** The key as last read or stored, for the Output channel's scrub, which cannot wait for secret storage. */
  last: string | undefined;

  constructor(private readonly secrets: vscode.SecretStorage) {
    // Also fires when another window of the same profile changes the key.
    this.subscription = secrets.onDidChange((e) => {
      if (e.key === KEY) {
        this.changed.fire();
      }
    });
  }

  async get(): Promise<string | undefined> {
    this.last = (await this.secrets.get(KEY)) || undefined;
    return this.last;
  }

  /** Asks for the key in a password box and stores it; returns whether a key was stored. */
  async prompt(): Promise<boolean> {
    const key = await vscode.window.showInputBox({
      title: 'speedpatch: LLM API key',
      prompt: 'Stored in VS Code secret storage and passed to the speedpatch server in memory only.',
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() === '' ? 'Enter a key, or press Escape to keep the current one' : undefined),
    });
    if (key === undefined) {
      return false;
    }
    await this.secrets.store(KEY, key.trim());
    return true;
  }

  async clear(): Promise<void> {
    await this.secrets.delete(KEY);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
