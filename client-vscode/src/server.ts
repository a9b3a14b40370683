// Starts the speedpatch language server (`python -m speedpatch.lsp`, stdio) with vscode-languageclient,
// feeds it the extension's settings, restarts it when it crashes, and relays its custom notifications.
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';
import { Interpreter, resolveInterpreter } from './interpreter';
import { Log } from './log';
import {
  OPEN_DIFF,
  OPEN_REPORT,
  OpenDiffParams,
  RUN_UPDATE,
  RUNS_CHANGED,
  RunSummary,
  TARGETS,
  TargetsResponse,
} from './protocol';
import { RestartPolicy } from './restartPolicy';
import { scrubbed, urlSecrets } from './scrub';
import { ApiKeyStore } from './secrets';
import { redacted, serverSettings, ServerSettings, SettingSpec } from './settings';
import { describeTargets, documentLanguages } from './targets';

export const SERVER_MODULE = 'speedpatch.lsp';

export class SpeedpatchServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private readonly policy = new RestartPolicy();
  private readonly runUpdates = new vscode.EventEmitter<RunSummary>();
  private readonly diffRequests = new vscode.EventEmitter<OpenDiffParams>();
  private readonly reportRequests = new vscode.EventEmitter<{ runId: string }>();
  private readonly listChanges = new vscode.EventEmitter<void>();
  private readonly readiness = new vscode.EventEmitter<boolean>();
  private readonly subscriptions: vscode.Disposable[] = [];
  /** Fires with every run summary the server pushes (start, each iteration, end). */
  readonly onRunUpdate = this.runUpdates.event;
  /** Fires when the server asks the editor to show a candidate's diff. */
  readonly onOpenDiff = this.diffRequests.event;
  /** Fires when the server asks the editor to show a run's report. */
  readonly onOpenReport = this.reportRequests.event;
  /** Fires when the server's list of runs changed beyond one run (workspace folders added or removed). */
  readonly onRunsChanged = this.listChanges.event;
  /** Fires true when a server is up, false when it stopped. */
  readonly onReadyChange = this.readiness.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: Log,
    private readonly apiKeys: ApiKeyStore,
    /** Called before starting; returns false when the Python package is missing and was not installed. */
    private readonly ensureInstalled: (python: string) => Promise<boolean>,
  ) {
    this.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('speedpatch.pythonPath')) {
          this.log.info('speedpatch.pythonPath changed: restarting the server');
          void this.restart();
        } else if (e.affectsConfiguration('speedpatch')) {
          void this.pushSettings();
        }
      }),
      apiKeys.onDidChange(() => void this.pushSettings()),
    );
  }

  /** The settings object for the server: the manifest's settings (generated from the server's schema). */
  private baseUrl(): string | undefined {
    return vscode.workspace.getConfiguration('speedpatch').get<string>('llm.baseUrl');
  }

  private currentSettings(apiKey: string | undefined): ServerSettings {
    const config = vscode.workspace.getConfiguration('speedpatch');
    const manifest = this.context.extension.packageJSON as {
      contributes?: { configuration?: { properties?: Record<string, SettingSpec> } };
    };
    return serverSettings((key) => config.get(key), manifest.contributes?.configuration?.properties ?? {}, apiKey);
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async start(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    this.interpreter = await resolveInterpreter(this.context.globalStorageUri, folder);
    const python = this.interpreter.command;
    this.log.info(`Python interpreter: ${python} (from ${this.interpreter.source})`);
    if (!(await this.ensureInstalled(python))) {
      this.log.error(`the speedpatch Python package is not available to ${python}; the server is not started`);
      return;
    }
    const settings = this.currentSettings(await this.apiKeys.get());
    this.log.info(`starting ${python} -m ${SERVER_MODULE} with settings ${JSON.stringify(redacted(settings))}`);
    const serverOptions: ServerOptions = {
      command: python,
      args: ['-m', SERVER_MODULE],
      transport: TransportKind.stdio,
      options: { cwd: folder?.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    // the targets' languages, as generated into the manifest (no list of them here)
    const manifest = this.context.extension.packageJSON as { activationEvents?: unknown };
    const languages = documentLanguages(manifest.activationEvents);
    this.log.info(`documents served: languages ${languages.join(', ')}`);
    const clientOptions: LanguageClientOptions = {
      documentSelector: languages.map((language) => ({ scheme: 'file', language })),
      // the client traces whole messages here (log level Trace, trace.server "verbose"): the key is scrubbed
      outputChannel: scrubbed(this.log.channel, () => [this.apiKeys.last, ...urlSecrets(this.baseUrl())]),
      initializationOptions: settings,
      errorHandler: {
        error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
        closed: () => this.onClosed(),
      },
      middleware: {
        workspace: {
          // A server that pulls "speedpatch" settings gets the same object as initializationOptions.
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) {
              return answer;
            }
            const key = await this.apiKeys.get();
            const values: unknown[] = answer;
            return params.items.map((item, i) => (item.section === 'speedpatch' ? this.currentSettings(key) : values[i]));
          },
        },
      },
    };
    const client = new LanguageClient('speedpatch', 'speedpatch', serverOptions, clientOptions);
    client.onNotification(RUN_UPDATE, (summary: RunSummary) => this.runUpdates.fire(summary));
    client.onNotification(OPEN_DIFF, (params: OpenDiffParams) => this.diffRequests.fire(params));
    client.onNotification(OPEN_REPORT, (params: { runId: string }) => this.reportRequests.fire(params));
    client.onNotification(RUNS_CHANGED, () => this.listChanges.fire());
    client.onDidChangeState((e) => {
      this.log.info(`server state: ${State[e.oldState]} -> ${State[e.newState]}`);
      this.readiness.fire(e.newState === State.Running);
    });
    this.client = client;
    try {
      await client.start();
      this.log.info('server started');
      void this.logTargets(client);
    } catch (error) {
      this.log.error('the server failed to start', error);
      void this.showError(`speedpatch: the language server failed to start (${python}). See the speedpatch output.`);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.log.error('stopping the server', error);
      }
    }
  }

  async restart(): Promise<void> {
    this.policy.reset();
    await this.stop();
    await this.start();
  }

  /** Runs one of the server's workspace/executeCommand commands ("speedpatch.optimize", ...). */
  async executeCommand<T>(command: string, args: unknown[]): Promise<T> {
    return (await this.ready().sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
  }

  async request<T>(method: string, params: unknown): Promise<T> {
    return await this.ready().sendRequest<T>(method, params);
  }

  private ready(): LanguageClient {
    if (!this.client || this.client.state !== State.Running) {
      throw new Error('the speedpatch server is not running (see the speedpatch output)');
    }
    return this.client;
  }

  /** Which targets and backends the server has, and which backend cannot run here: the log says it. */
  private async logTargets(client: LanguageClient): Promise<void> {
    try {
      const answer = await client.sendRequest<TargetsResponse>(TARGETS, {});
      describeTargets(answer).forEach((line) => this.log.info(line));
    } catch (error) {
      this.log.error('asking the server for its targets', error);
    }
  }

  private async pushSettings(): Promise<void> {
    if (!this.running || !this.client) {
      return;
    }
    const settings = this.currentSettings(await this.apiKeys.get());
    this.log.info(`settings changed: ${JSON.stringify(redacted(settings))}`);
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { speedpatch: settings } });
  }

  private onClosed(): { action: CloseAction; handled: boolean } {
    if (this.client === undefined) {
      return { action: CloseAction.DoNotRestart, handled: true }; // stopped on purpose
    }
    if (this.policy.shouldRestart(Date.now())) {
      this.log.error(`the server stopped unexpectedly (crash ${this.policy.recentCrashes}); restarting it`);
      void this.showError('speedpatch: the language server stopped unexpectedly and was restarted.');
      return { action: CloseAction.Restart, handled: true };
    }
    this.log.error(`the server crashed ${this.policy.recentCrashes} times in a few minutes; not restarting it`);
    void this.showError(
      'speedpatch: the language server keeps crashing and was not restarted. Check the output, then restart it.',
      true,
    );
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private async showError(message: string, offerRestart = false): Promise<void> {
    const actions = offerRestart ? ['Show log', 'Restart'] : ['Show log'];
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === 'Show log') {
      this.log.show();
    } else if (choice === 'Restart') {
      await this.restart();
    }
  }

  dispose(): void {
    void this.stop();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.runUpdates.dispose();
    this.diffRequests.dispose();
    this.reportRequests.dispose();
    this.listChanges.dispose();
    this.readiness.dispose();
  }
}
