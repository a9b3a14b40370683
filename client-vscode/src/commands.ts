// The extension's own commands ("speedpatch.client.*"): each finds what it acts on (the kernel at the
// cursor, a run) and calls the server's command for it. The server's command ids ("speedpatch.optimize"...)
// are registered by vscode-languageclient and are not registered again here.
import * as path from 'path';
import * as vscode from 'vscode';
import { CandidateDocuments } from './diff';
import { formatSpeedup, runDescription } from './format';
import { Log } from './log';
import { RunFilter, sameUri, selectRuns } from './pick';
import { RunSummary } from './protocol';
import { RunReportPanel } from './report';
import { RunList } from './runs';
import { SpeedpatchServer } from './server';

interface OptimizeArgs {
  uri: string;
  kernel: string;
  quick?: boolean;
}

/** What a command may be invoked with: a Runs view node, {runId, candidateId?}, or nothing. */
type RunArg = { kind?: string; run?: RunSummary; runId?: string; candidateId?: string } | undefined;

function runIdOf(arg: RunArg): string | undefined {
  return arg?.run?.runId ?? (typeof arg?.runId === 'string' ? arg.runId : undefined);
}

/** Server commands offered for the kernel at `range`, from the server's code actions (or code lenses). */
async function optimizeOffers(uri: vscode.Uri, range: vscode.Range): Promise<{ title: string; args: OptimizeArgs }[]> {
  const offers: { title: string; args: OptimizeArgs }[] = [];
  const collect = (command: vscode.Command | undefined): void => {
    const args = command?.arguments?.[0] as OptimizeArgs | undefined;
    if (command?.command === 'speedpatch.optimize' && args && !offers.some((o) => o.title === command.title)) {
      offers.push({ title: command.title, args });
    }
  };
  const actions =
    (await vscode.commands.executeCommand<(vscode.Command | vscode.CodeAction)[]>('vscode.executeCodeActionProvider', uri, range)) ?? [];
  for (const action of actions) {
    collect('kind' in action || 'edit' in action || 'diagnostics' in action ? (action as vscode.CodeAction).command : (action as vscode.Command));
  }
  if (offers.length === 0) {
    // The cursor is outside every kernel: offer each kernel of the file (its code lens).
    const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 100)) ?? [];
    lenses.forEach((lens) => collect(lens.command));
  }
  return offers;
}

export class Commands {
  constructor(
    private readonly server: SpeedpatchServer,
    private readonly runs: RunList,
    private readonly diffs: CandidateDocuments,
    private readonly report: RunReportPanel,
    private readonly log: Log,
  ) {}

  register(): vscode.Disposable[] {
    const wrap = (name: string, body: (arg: RunArg) => Promise<void>) =>
      vscode.commands.registerCommand(`speedpatch.client.${name}`, async (arg: RunArg) => {
        try {
          await body(arg);
        } catch (error) {
          this.log.error(`command ${name}`, error);
          void vscode.window.showErrorMessage(`speedpatch: ${error instanceof Error ? error.message : String(error)}`);
        }
      });
    return [
      wrap('optimize', () => this.optimize()),
      wrap('cancel', (arg) => this.cancel(arg)),
      wrap('showDiff', (arg) => this.showDiff(arg)),
      wrap('apply', (arg) => this.apply(arg)),
      wrap('showRuns', () => this.showRuns()),
      wrap('showReport', (arg) => this.showReport(arg)),
      wrap('refreshRuns', () => this.runs.refresh()),
    ];
  }

  async optimize(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage('speedpatch: open a kernel source file and put the cursor in a kernel.');
      return;
    }
    const all = await optimizeOffers(editor.document.uri, editor.selection);
    // The full search is what this command means; the "(quick)" variants stay in the code action menu.
    const full = all.filter((o) => !o.args.quick);
    const offers = full.length > 0 ? full : all;
    if (offers.length === 0) {
      void vscode.window.showInformationMessage('speedpatch: no kernel found in this file.');
      return;
    }
    const chosen =
      offers.length === 1
        ? offers[0]
        : await vscode.window.showQuickPick(
            offers.map((o) => ({ label: o.title, offer: o })),
            { title: 'speedpatch: optimize which kernel?' },
          ).then((item) => item?.offer);
    if (!chosen) {
      return;
    }
    const result = await this.server.executeCommand<{ runId: string }>('speedpatch.optimize', [chosen.args]);
    this.log.info(`optimize ${chosen.args.kernel}: run ${result.runId}`);
  }

  async cancel(arg: RunArg): Promise<void> {
    const runId = runIdOf(arg) ?? (await this.pickRun({ statuses: ['running'] }, 'Cancel which run?'))?.runId;
    if (runId) {
      const result = await this.server.executeCommand<{ cancelled: boolean }>('speedpatch.cancel', [{ runId }]);
      this.log.info(`cancel ${runId}: ${result.cancelled ? 'cancelled' : 'was not running'}`);
    }
  }

  async showDiff(arg: RunArg): Promise<void> {
    const runId = runIdOf(arg) ?? (await this.pickRun({ withWinner: true }, 'Show the diff of which run?'))?.runId;
    if (runId) {
      await this.diffs.openDiff(runId, arg?.candidateId);
    }
  }

  async apply(arg: RunArg): Promise<void> {
    const runId = runIdOf(arg) ?? (await this.pickRun({ withWinner: true }, 'Apply the best rewrite of which run?'))?.runId;
    if (!runId) {
      return;
    }
    const result = await this.server.executeCommand<{ applied: boolean; message: string }>('speedpatch.apply', [{ runId }]);
    this.log.info(`apply ${runId}: ${result.applied ? 'applied' : 'not applied'} ${result.message}`);
    if (result.applied) {
      void vscode.window.showInformationMessage(`speedpatch: ${result.message || 'rewrite applied'} — save the file to re-verify it.`);
    }
    // A refusal (e.g. stale kernel) is already shown by the server through window/showMessage.
  }

  async showRuns(): Promise<void> {
    await this.runs.refresh();
    await vscode.commands.executeCommand('speedpatch.runs.focus');
  }

  async showReport(arg: RunArg): Promise<void> {
    const runId = runIdOf(arg) ?? (await this.pickRun({}, 'Show the report of which run?'))?.runId;
    if (runId) {
      await this.report.show(runId);
    }
  }

  /** The run to act on: the only candidate, or the user's choice, runs of the active file first. */
  private async pickRun(filter: RunFilter, title: string): Promise<RunSummary | undefined> {
    if (this.runs.runs.length === 0) {
      await this.runs.refresh();
    }
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    const choices = selectRuns(this.runs.runs, { ...filter, uri });
    if (choices.length === 0) {
      void vscode.window.showInformationMessage('speedpatch: no matching run. Start one with "Optimize kernel at cursor".');
      return undefined;
    }
    const inActiveFile = uri ? choices.filter((r) => sameUri(r.uri, uri)) : [];
    if (inActiveFile.length === 1 || choices.length === 1) {
      return choices[0];
    }
    const item = await vscode.window.showQuickPick(
      choices.map((run) => ({
        label: `${run.kernel} ${formatSpeedup(run.speedup)}`,
        description: runDescription(run),
        detail: path.posix.basename(vscode.Uri.parse(run.uri).path),
        run,
      })),
      { title: `speedpatch: ${title}` },
    );
    return item?.run;
  }
}
