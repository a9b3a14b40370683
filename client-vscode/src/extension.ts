// Entry point: wires the server connection, the views and the commands together.
import * as vscode from 'vscode';
import { Commands } from './commands';
import { CandidateDocuments, SCHEME } from './diff';
import { Installer } from './installer';
import { Log } from './log';
import { ProgressNotices } from './progressNotice';
import { RunReportPanel } from './report';
import { RunList } from './runs';
import { RunsView } from './runsView';
import { ApiKeyStore } from './secrets';
import { SpeedpatchServer } from './server';
import { RunStatusBar } from './statusBar';

let server: SpeedpatchServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = new Log();
  const manifest = context.extension.packageJSON as { version: string };
  log.info(`speedpatch extension ${manifest.version} activated`);
  const apiKeys = new ApiKeyStore(context.secrets);
  let restartServer = (): Promise<void> => Promise.resolve();
  const installer = new Installer(context, log, () => restartServer());
  server = new SpeedpatchServer(context, log, apiKeys, (python) => installer.ensureInstalled(python));
  const connection = server;
  restartServer = () => connection.restart();

  const runs = new RunList(server, log);
  const diffs = new CandidateDocuments(server);
  const report = new RunReportPanel(server);
  const runsView = new RunsView(runs, server, log);
  const commands = new Commands(server, runs, diffs, report, log);

  context.subscriptions.push(
    log,
    apiKeys,
    server,
    runs,
    report,
    runsView,
    new RunStatusBar(runs),
    new ProgressNotices(server, log),
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, diffs),
    vscode.window.registerTreeDataProvider('speedpatch.runs', runsView),
    ...commands.register(),
    server.onOpenDiff((params) =>
      diffs.openDiff(params.runId, params.candidateId).catch((error) => log.error('opening the diff', error)),
    ),
    server.onOpenReport((params) => report.show(params.runId).catch((error) => log.error('opening the report', error))),
    vscode.commands.registerCommand('speedpatch.client.setApiKey', async () => {
      if (await apiKeys.prompt()) {
        log.info('API key stored in secret storage'); // the key itself is never logged
        void vscode.window.showInformationMessage('speedpatch: API key stored in VS Code secret storage.');
      }
    }),
    vscode.commands.registerCommand('speedpatch.client.clearApiKey', async () => {
      await apiKeys.clear();
      log.info('API key removed from secret storage');
    }),
    vscode.commands.registerCommand('speedpatch.client.restartServer', () => connection.restart()),
    vscode.commands.registerCommand('speedpatch.client.showLog', () => log.show()),
    vscode.commands.registerCommand('speedpatch.client.installServer', () => installer.install()),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
