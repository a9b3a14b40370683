// Maps the extension's VS Code settings onto the settings object the server reads from
// initializationOptions and workspace/didChangeConfiguration. Unset values are left out so the server
// falls back to the workspace's speedpatch.toml for them. Which settings there are is not listed here: it is
// the manifest's contributes.configuration, generated from the server's schema
// (server/lsp/settings_schema.py), so a setting is added in one place.

import { MASK, scrub, urlSecrets } from './scrub';

/** The settings object: sections as in the manifest ("search.beam" -> {search: {beam}}). */
export interface ServerSettings {
  llm?: { apiKey?: string; [key: string]: unknown };
  backends?: Record<string, string>; // target name -> backend name
  [key: string]: unknown;
}

/** One `contributes.configuration.properties` entry of the manifest, as far as the mapping needs it. */
export interface SettingSpec {
  type?: string | string[];
  minimum?: number;
}

/** Reads one setting below the "speedpatch." section, e.g. read("search.beam"); read("backends") gives the
 * object of every speedpatch.backends.<target> setting (VS Code groups dotted keys), whatever the targets are. */
export type SettingReader = (key: string) => unknown;

const SECTION = 'speedpatch.';
// the extension's own: which Python runs the server; the server never reads it
const CLIENT_ONLY = new Set(['pythonPath']);
const BACKENDS = 'backends';

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The value to send for a setting of this spec, or undefined when it is unset (or of no usable shape). */
function valueOf(spec: SettingSpec, raw: unknown): unknown {
  const types = Array.isArray(spec.type) ? spec.type : [spec.type];
  if (types.includes('boolean')) {
    return typeof raw === 'boolean' ? raw : undefined;
  }
  if (types.includes('integer') || types.includes('number')) {
    const usable = typeof raw === 'number' && Number.isFinite(raw) && raw >= (spec.minimum ?? -Infinity);
    return usable ? raw : undefined;
  }
  if (types.includes('array')) {
    const items = Array.isArray(raw) ? raw.map(text).filter((m): m is string => m !== undefined) : [];
    return items.length > 0 ? items : undefined;
  }
  return types.includes('string') ? text(raw) : undefined;
}

/** The backends chosen per target; which targets there are is the server's business (speedpatch/targets). */
function backendChoices(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return undefined;
  }
  const chosen: Record<string, string> = {};
  for (const [target, backend] of Object.entries(value)) {
    const name = text(backend);
    if (name !== undefined) {
      chosen[target] = name;
    }
  }
  return Object.keys(chosen).length > 0 ? chosen : undefined;
}

function put(out: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let table = out;
  for (const part of parts.slice(0, -1)) {
    table = (table[part] ??= {}) as Record<string, unknown>;
  }
  table[parts[parts.length - 1]] = value;
}

/** The settings object for the server: every manifest setting that is set, then the API key. */
export function serverSettings(
  read: SettingReader,
  specs: Record<string, SettingSpec>,
  apiKey?: string,
): ServerSettings {
  const out: ServerSettings = {};
  for (const [name, spec] of Object.entries(specs)) {
    const key = name.startsWith(SECTION) ? name.slice(SECTION.length) : undefined;
    if (key === undefined || CLIENT_ONLY.has(key) || key.startsWith(`${BACKENDS}.`)) {
      continue;
    }
    const value = valueOf(spec, read(key));
    if (value !== undefined) {
      put(out, key, value);
    }
  }
  const backends = backendChoices(read(BACKENDS)); // every target's, those of plugin targets too
  if (backends !== undefined) {
    out.backends = backends;
  }
  if (text(apiKey) !== undefined) {
    put(out, 'llm.apiKey', text(apiKey));
  }
  return out;
}

/** The settings with the API key masked, and any key written into the base URL, for logging what was sent. */
export function redacted(settings: ServerSettings): ServerSettings {
  const baseUrl = typeof settings.llm?.baseUrl === 'string' ? settings.llm.baseUrl : undefined;
  if (settings.llm?.apiKey === undefined && urlSecrets(baseUrl).length === 0) {
    return settings;
  }
  const llm = { ...settings.llm, ...(baseUrl === undefined ? {} : { baseUrl: scrub(baseUrl, urlSecrets(baseUrl)) }) };
  return { ...settings, llm: settings.llm?.apiKey === undefined ? llm : { ...llm, apiKey: MASK } };
}
