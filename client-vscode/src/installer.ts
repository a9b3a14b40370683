// Makes sure the chosen Python can import the speedpatch server. When it cannot, the user is asked
// whether to install the wheel bundled in the extension (python/*.whl) into a private virtual environment
// in the extension's global storage; pip fetches the wheel's dependencies from the package index.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { managedEnvironment, managedPython } from './interpreter';
import { Log } from './log';
import { SERVER_MODULE } from './server';

const FIND_SERVER = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('${SERVER_MODULE}') else 3)`;

function run(command: string, args: string[], log: Log, timeoutMs: number): Promise<{ code: number | null; missing: boolean }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const text = `${stdout}${stderr}`.trim();
      if (text) {
        log.info(`${path.basename(command)} ${args.slice(0, 3).join(' ')}: ${text.slice(-4000)}`);
      }
      const err = error as (NodeJS.ErrnoException & { code?: number | string }) | null;
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, missing: err?.code === 'ENOENT' });
    });
  });
}

export class Installer {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: Log,
    /** Called after a successful install so the server starts with the new environment. */
    private readonly onInstalled: () => Promise<void>,
  ) {}

  bundledWheel(): string | undefined {
    const folder = path.join(this.context.extensionPath, 'python');
    const wheel = fs.existsSync(folder) ? fs.readdirSync(folder).find((f) => f.endsWith('.whl')) : undefined;
    return wheel ? path.join(folder, wheel) : undefined;
  }

  /** True when `python` can import the server; otherwise tells the user and offers the install. */
  async ensureInstalled(python: string): Promise<boolean> {
    const check = await run(python, ['-c', FIND_SERVER], this.log, 30_000);
    if (check.code === 0) {
      return true;
    }
    const problem = check.missing
      ? `Python was not found at "${python}".`
      : `The speedpatch Python package is not installed for ${python}.`;
    void this.offerInstall(problem);
    return false;
  }

  private async offerInstall(problem: string): Promise<void> {
    const wheel = this.bundledWheel();
    const actions = wheel ? ['Install bundled package', 'Open settings'] : ['Open settings'];
    const advice = wheel
      ? 'Install the bundled package into a private environment (pip downloads its dependencies), or set speedpatch.pythonPath.'
      : 'Run `pip install speedpatch` (or `pip install .` in the speedpatch repository) for that interpreter, or set speedpatch.pythonPath.';
    const choice = await vscode.window.showWarningMessage(`speedpatch: ${problem} ${advice}`, ...actions);
    if (choice === 'Install bundled package') {
      await this.install();
    } else if (choice === 'Open settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'speedpatch.pythonPath');
    }
  }

  /** Creates the private environment and installs the bundled wheel into it. */
  async install(): Promise<void> {
    const wheel = this.bundledWheel();
    if (!wheel) {
      void vscode.window.showErrorMessage('speedpatch: this build of the extension has no bundled Python package.');
      return;
    }
    const base = vscode.workspace.getConfiguration('speedpatch').get<string>('pythonPath', '').trim() || 'python3';
    const env = managedEnvironment(this.context.globalStorageUri);
    const ok = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'speedpatch: installing the Python package' },
      async (progress) => {
        fs.mkdirSync(this.context.globalStorageUri.fsPath, { recursive: true });
        progress.report({ message: `creating ${env}` });
        if ((await run(base, ['-m', 'venv', env], this.log, 120_000)).code !== 0) {
          return false;
        }
        progress.report({ message: `pip install ${path.basename(wheel)}` });
        return (await run(managedPython(this.context.globalStorageUri), ['-m', 'pip', 'install', wheel], this.log, 900_000)).code === 0;
      },
    );
    if (!ok) {
      this.log.show();
      void vscode.window.showErrorMessage(
        'speedpatch: installing the Python package failed (see the output). Python 3.10+ with the venv module is needed.',
      );
      return;
    }
    this.log.info(`installed ${path.basename(wheel)} into ${env}`);
    await this.onInstalled();
  }
}
