// Which Python runs the language server: the speedpatch.pythonPath setting, else the environment the
// extension installed the bundled package into, else the Python extension's active interpreter, else python3.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

export interface Interpreter {
  command: string;
  source: 'setting' | 'managed environment' | 'Python extension' | 'default';
}

export function managedEnvironment(storage: vscode.Uri): string {
  return path.join(storage.fsPath, 'venv');
}

export function managedPython(storage: vscode.Uri): string {
  const env = managedEnvironment(storage);
  return process.platform === 'win32' ? path.join(env, 'Scripts', 'python.exe') : path.join(env, 'bin', 'python');
}

// The parts of the Python extension's exported API that are used here (both the current environments API
// and the older settings API, whichever the installed version has).
interface PythonExtensionApi {
  environments?: { getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined };
  settings?: { getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined } };
}

async function fromPythonExtension(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const active = api.environments?.getActiveEnvironmentPath(resource)?.path;
    if (active) {
      return active;
    }
    return api.settings?.getExecutionDetails(resource).execCommand?.[0];
  } catch {
    return undefined; // a broken Python extension should not keep speedpatch from starting
  }
}

export async function resolveInterpreter(storage: vscode.Uri, resource?: vscode.Uri): Promise<Interpreter> {
  const configured = vscode.workspace.getConfiguration('speedpatch', resource).get<string>('pythonPath', '').trim();
  if (configured) {
    return { command: configured, source: 'setting' };
  }
  const managed = managedPython(storage);
  if (fs.existsSync(managed)) {
    return { command: managed, source: 'managed environment' };
  }
  const python = await fromPythonExtension(resource);
  if (python) {
    return { command: python, source: 'Python extension' };
  }
  return { command: process.platform === 'win32' ? 'python' : 'python3', source: 'default' };
}
