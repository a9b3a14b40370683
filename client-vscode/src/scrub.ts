// Secrets out of the Output channel. The channel is also VS Code's log file on disk, and at log level Trace
// with speedpatch.trace.server = "verbose" vscode-languageclient writes every message there whole: the API
// key in initialize's initializationOptions and in each didChangeConfiguration. Every write is scrubbed.

/** The channel methods that write text (OutputChannel and LogOutputChannel). */
const WRITES = new Set(['append', 'appendLine', 'replace', 'trace', 'debug', 'info', 'warn', 'error']);
/** Shorter values are not worth the false positives ("true"), as in the server's speedpatch.redact. */
const MIN_LENGTH = 8;
export const MASK = '<set>';

/** The credentials written into a URL: its userinfo, the password in it (or a user name alone, as tokens
 * are given), as written and percent-decoded. */
export function urlSecrets(url: string | undefined): string[] {
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(url ?? '');
  if (!match) {
    return [];
  }
  const userinfo = match[1];
  const colon = userinfo.indexOf(':');
  const found = [userinfo, colon < 0 ? userinfo : userinfo.slice(colon + 1)];
  for (const value of [...found]) {
    try {
      found.push(decodeURIComponent(value));
    } catch {
      // not valid percent-encoding: only the form as written
    }
  }
  return found;
}

/** `text` with every secret (of MIN_LENGTH or more) replaced by MASK, the longest first. */
export function scrub(text: string, secrets: readonly (string | undefined)[]): string {
  const values = secrets.filter((s): s is string => s !== undefined && s.length >= MIN_LENGTH);
  for (const value of values.sort((a, b) => b.length - a.length)) {
    text = text.split(value).join(MASK);
  }
  return text;
}

/** `channel`, with every text it is given scrubbed of `secrets()` (asked at each write: the key can change). */
export function scrubbed<T extends object>(channel: T, secrets: () => readonly (string | undefined)[]): T {
  return new Proxy(channel, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') {
        return value;
      }
      const method = value as (...args: unknown[]) => unknown;
      if (typeof name !== 'string' || !WRITES.has(name)) {
        return method.bind(target);
      }
      return (...args: unknown[]): unknown =>
        method.apply(target, args.map((arg) => (typeof arg === 'string' ? scrub(arg, secrets()) : arg)));
    },
  });
}
