// Shows a candidate as VS Code's diff editor: the file (or the run's original text, when the file has
// changed since) against the rewrite, both served from the server's speedpatch/candidate request.
import * as path from 'path';
import * as vscode from 'vscode';
import { formatSpeedup } from './format';
import { CANDIDATE, CandidateResponse } from './protocol';
import { sameUri } from './pick';
import { SpeedpatchServer } from './server';

export const SCHEME = 'speedpatch-candidate';

type Side = 'original' | 'new';

export function candidateUri(response: CandidateResponse, side: Side): vscode.Uri {
  // The file's own name keeps the language mode (syntax highlighting) of the virtual document.
  const name = path.posix.basename(vscode.Uri.parse(response.uri).path) || `${response.kernel}.txt`;
  const query = new URLSearchParams({ run: response.runId, candidate: response.candidateId, side }).toString();
  return vscode.Uri.from({ scheme: SCHEME, path: `/${response.runId}/${side}/${name}`, query });
}

export function diffTitle(response: CandidateResponse): string {
  const name = path.posix.basename(vscode.Uri.parse(response.uri).path);
  return `${name}: ${response.kernel} ${formatSpeedup(response.speedup)} faster (${response.backend})`;
}

export class CandidateDocuments implements vscode.TextDocumentContentProvider {
  private readonly cache = new Map<string, CandidateResponse>();

  constructor(private readonly server: SpeedpatchServer) {}

  async fetch(runId: string, candidateId?: string): Promise<CandidateResponse> {
    const params = candidateId ? { runId, candidateId } : { runId };
    const response = await this.server.request<CandidateResponse>(CANDIDATE, params);
    this.cache.set(`${response.runId}/${response.candidateId}`, response);
    return response;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const query = new URLSearchParams(uri.query);
    const runId = query.get('run') ?? '';
    const candidateId = query.get('candidate') ?? '';
    const response = this.cache.get(`${runId}/${candidateId}`) ?? (await this.fetch(runId, candidateId));
    return query.get('side') === 'original' ? response.originalText : response.newText;
  }

  async openDiff(runId: string, candidateId?: string): Promise<void> {
    const response = await this.fetch(runId, candidateId);
    const file =
      vscode.workspace.textDocuments.find((d) => sameUri(d.uri.toString(), response.uri)) ??
      (await Promise.resolve(vscode.workspace.openTextDocument(vscode.Uri.parse(response.uri))).catch(() => undefined));
    // Compare against the live file only while it still holds the text the run started from;
    // otherwise the diff would mix the user's later edits into the rewrite.
    const left = file && file.getText() === response.originalText ? file.uri : candidateUri(response, 'original');
    // not a preview tab: the diff stays open beside what the user was looking at, until Accept or Discard
    await vscode.commands.executeCommand('vscode.diff', left, candidateUri(response, 'new'), diffTitle(response), {
      preview: false,
    });
  }
}

/** The run (and candidate) a diff editor's right-hand side shows, from its speedpatch-candidate URI. */
export function runOfCandidateUri(uri: { scheme: string; query: string }): { runId: string; candidateId: string } | undefined {
  if (uri.scheme !== SCHEME) {
    return undefined;
  }
  const query = new URLSearchParams(uri.query);
  const runId = query.get('run');
  return runId ? { runId, candidateId: query.get('candidate') ?? '' } : undefined;
}
