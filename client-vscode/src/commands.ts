// The extension's own commands ("speedpatch.client.*"): each finds what it acts on (the kernel at the
// cursor, a run) and calls the server's command for it. The server's command ids ("speedpatch.optimize"...)
// are registered by vscode-languageclient and are not registered again here.
import * as path from 'path';
import * as vscode from 'vscode';
import { CandidateDocuments, runOfCandidateUri } from './diff';
import { formatSpeedup, runDescription } from './format';
import { Log } from './log';
import { noKernelMessage, OptimizeOffer, optimizeOffers, RunFilter, sameUri, selectRuns } from './pick';
import { RunSummary } from './protocol';
import { RunReportPanel } from './report';
import { RunList } from './runs';
import { multiRoot } from './runsView';
import { SpeedpatchServer } from './server';

/** What a command may be invoked with: a Runs view node, {runId, candidateId?}, or nothing. */
type RunArg = { kind?: string; run?: RunSummary; runId?: string; candidateId?: string } | undefined;

function runIdOf(arg: RunArg): string | undefined {
  return arg?.run?.runId ?? (typeof arg?.runId === 'string' ? arg.runId : undefined);
}

/** Optimize commands for the kernel at `range`: the server's code actions there, else the file's code lenses. */
async function offersAt(uri: vscode.Uri, range: vscode.Range): Promise<OptimizeOffer[]> {
  const actions =
    (await vscode.commands.executeCommand<(vscode.Command | vscode.CodeAction)[]>('vscode.executeCodeActionProvider', uri, range)) ?? [];
  // A Command's `command` is its id; a CodeAction's `command` is a nested Command.
  const offers = optimizeOffers(
    actions.map((a) => (typeof a.command === 'string' ? (a as vscode.Command) : (a as vscode.CodeAction).command)),
  );
  if (offers.length > 0) {
    return offers;
  }
  // The cursor is outside every kernel: offer each kernel of the file (its code lens).
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 100)) ?? [];
  return optimizeOffers(lenses.map((lens) => lens.command));
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
      wrap('acceptDiff', () => this.acceptDiff()),
      wrap('discardDiff', () => this.discardDiff()),
    ];
  }

  async optimize(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage('speedpatch: open a kernel source file and put the cursor in a kernel.');
      return;
    }
    const offers = await offersAt(editor.document.uri, editor.selection);
    if (offers.length === 0) {
      // say why: the server's own diagnostic (does not parse, no GPU here...) when it has one
      const reasons = vscode.languages
        .getDiagnostics(editor.document.uri)
        .filter((d) => d.source === 'speedpatch' && d.severity <= vscode.DiagnosticSeverity.Warning)
        .map((d) => d.message);
      void vscode.window.showWarningMessage(noKernelMessage(reasons, path.posix.basename(editor.document.uri.path)));
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
      // the server's message already says what to do next ("...; save to accept and re-verify it")
      void vscode.window.showInformationMessage(`speedpatch: ${result.message || 'rewrite applied; save to re-verify it'}`);
    }
    // A refusal (e.g. stale kernel) is already shown by the server through window/showMessage.
  }

  /** Diff editor title action: apply the rewrite shown on the right, then close the diff. */
  async acceptDiff(): Promise<void> {
    const shown = this.candidateInActiveEditor();
    if (!shown) {
      return;
    }
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await this.apply({ runId: shown.runId });
  }

  /** Diff editor title action: close the diff, leaving the file as it is. */
  async discardDiff(): Promise<void> {
    if (this.candidateInActiveEditor()) {
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    }
  }

  private candidateInActiveEditor(): { runId: string; candidateId: string } | undefined {
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const modified = tab instanceof vscode.TabInputTextDiff ? tab.modified : vscode.window.activeTextEditor?.document.uri;
    return modified ? runOfCandidateUri(modified) : undefined;
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
        description: runDescription(run, multiRoot()),
        detail: path.posix.basename(vscode.Uri.parse(run.uri).path),
        run,
      })),
      { title: `speedpatch: ${title}` },
    );
    return item?.run;
  }
}
