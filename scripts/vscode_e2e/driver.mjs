// Drives a running code-server (a real VS Code workbench) with headless Chromium through one scenario and
// asserts on the DOM. Run by tests/vscode/test_e2e.py; exits 0 on success, 1 with the reason on failure,
// leaving a screenshot and the page text in $E2E_ARTIFACTS.
//
// Scenarios: activate, optimize, crash (the server is killed and must come back), missing (the interpreter
// lacks the Python package: the install prompt must show), multiroot (a .code-workspace with several folders:
// optimize a kernel of one of them; the Runs view labels the run with that folder), doesNotParse (a typo in
// the kernel file), noGpu (a CUDA kernel with no GPU here: the lens and "Configure a GPU backend…"),
// baselineFails (the kernel parses but does not compile: lens, squiggle and message say so).
// Environment: E2E_URL (code-server base URL), E2E_FOLDER (workspace folder), E2E_FILE (file to open, relative
// name), E2E_SCENARIO ("activate" | "optimize"), E2E_ARTIFACTS (folder), PLAYWRIGHT_CORE (package folder),
// CHROMIUM (executable), E2E_TIMEOUT_MS (for the search to finish; default 180000), E2E_SECRET (an API key
// to set in the "activate" scenario), E2E_PID_FILE (pids of the Python processes, "crash" scenario),
// E2E_WORKSPACE (a .code-workspace file to open instead of E2E_FOLDER), E2E_RUN_FOLDER (the workspace folder
// holding E2E_FILE, "multiroot" scenario).
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const URL = env('E2E_URL');
const FOLDER = env('E2E_FOLDER');
const FILE = env('E2E_FILE');
const SCENARIO = env('E2E_SCENARIO');
const ARTIFACTS = env('E2E_ARTIFACTS');
const WORKSPACE = process.env.E2E_WORKSPACE;
const SEARCH_TIMEOUT = Number(process.env.E2E_TIMEOUT_MS ?? 180000);
// Waits on the extension host and the Python server starting: on a loaded 2-core CI machine the extension
// host alone was seen to take ~55 s to start, so these get generous room.
const STARTUP_TIMEOUT = Number(process.env.E2E_STARTUP_MS ?? 150000);
const started = Date.now();

function step(message) {
  console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}

// Monaco renders spaces of injected text (inlay hints) as U+00A0.
const normalise = (text) => (text ?? '').replace(/\u00a0/g, ' ');

async function texts(page, selector) {
  return (await page.locator(selector).allTextContents()).map(normalise);
}

/** Polls the texts of `selector` until one matches `pattern` (returned) or one matches `failPattern`. */
async function waitForText(page, selector, pattern, timeout, what, failPattern = undefined) {
  const deadline = Date.now() + timeout;
  let last = [];
  while (Date.now() < deadline) {
    last = await texts(page, selector);
    const hit = last.find((t) => pattern.test(t));
    if (hit !== undefined) return hit;
    const dead = failPattern && last.find((t) => failPattern.test(t));
    if (dead) throw new Error(`while waiting for ${what} (${pattern}): ${dead}`);
    await page.waitForTimeout(250);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what} (${pattern}); last seen: ${JSON.stringify(last.slice(0, 12))}`);
}

/** Runs a command from the command palette by its full title ("speedpatch: Show log"). */
async function palette(page, title, timeout = 30000) {
  step(`palette: ${title}`);
  // Click the row whose label is exactly the title: the fuzzy match may rank another command first
  // ("File: Save" finds "File: Compare Active File with Saved" on top).
  const exact = new RegExp(`^${escapeRegExp(title)}$`);
  const row = page
    .locator('.quick-input-list .monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: exact }) })
    .first();
  const input = page.locator('.quick-input-widget input');
  const deadline = Date.now() + timeout;
  for (;;) {
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible', timeout: 15000 });
    await input.fill(`>${title}`);
    try {
      await row.waitFor({ state: 'visible', timeout: 5000 });
      await row.click();
      return;
    } catch (error) {
      // The palette lists the commands known when it opened: an extension that is still starting
      // may not be in it yet. Close it and open it again.
      await page.keyboard.press('Escape');
      if (Date.now() > deadline) throw error;
    }
  }
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Opens (or brings back) a file's own editor by clicking it in the Explorer: unlike Quick Open this does
 * not wait for the file search to index a fresh workspace. */
async function openFile(page, name) {
  step(`open ${name}`);
  const exact = new RegExp(`^${escapeRegExp(name)}$`);
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: exact }).first();
  await row.waitFor({ state: 'visible', timeout: 30000 });
  await row.click();
  await page.locator('.tab.active', { hasText: exact }).first().waitFor({ timeout: 15000 });
  await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: 15000 });
}

/** In a multi-root workspace the Explorer shows each workspace folder as a root row: expands the one named
 * `name` (clicking an expanded root would collapse it, so its state is read first). */
async function expandRoot(page, name) {
  step(`expand workspace folder ${name}`);
  const exact = new RegExp(`^${escapeRegExp(name)}$`, 'i');
  const row = page.locator('.explorer-folders-view .monaco-list-row[aria-level="1"]', { hasText: exact }).first();
  // A loaded machine may restore another side-bar view or render the tree before the workspace's folders are
  // resolved: say what the Explorer shows, bring it forward (then reload the window), and wait again.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await row.waitFor({ state: 'visible', timeout: 15000 });
      break;
    } catch (error) {
      const shown = await texts(page, '.explorer-folders-view .monaco-list-row').catch(() => []);
      step(`the Explorer shows ${JSON.stringify(shown)} (attempt ${attempt})`);
      if (attempt === 3) throw error;
      if (attempt === 2) {
        await palette(page, 'Developer: Reload Window');
        await page.locator('.monaco-workbench').waitFor({ timeout: STARTUP_TIMEOUT });
      }
      await palette(page, 'View: Show Explorer');
    }
  }
  const deadline = Date.now() + 30000;
  while ((await row.getAttribute('aria-expanded')) !== 'true') {
    if (Date.now() > deadline) throw new Error(`the workspace folder ${name} did not expand in the Explorer`);
    await row.click();
    await page.waitForTimeout(500);
  }
}

/** Clicks the code lens whose text matches `pattern` (each lens command is an <a> in the decoration). */
async function clickLens(page, pattern) {
  step(`click code lens ${pattern}`);
  const link = page.locator('.codelens-decoration a', { hasText: pattern }).first();
  await link.waitFor({ state: 'visible', timeout: STARTUP_TIMEOUT });
  await link.click();
}

/** Shows the speedpatch Output channel and waits for `pattern` in its visible lines. */
async function showOutput(page, pattern = /speedpatch extension .* activated/) {
  await palette(page, 'speedpatch: Show log');
  return waitForText(page, '.part.panel .view-lines', pattern, 30000, `${pattern} in the speedpatch Output channel`);
}

async function scenarioActivate(page) {
  await openFile(page, FILE);
  const output = await showOutput(page);
  step(`output channel: ${output.slice(0, 300)}`);
  await waitForText(page, '.part.panel .view-lines', /server state: Starting -> Running/, STARTUP_TIMEOUT, 'the server running');
  const status = await waitForText(page, '.statusbar-item', /speedpatch/, 15000, 'the status bar item');
  step(`status bar: ${status}`);

  // "Set API key": a password box; the key reaches the server (logged masked) and is shown nowhere.
  const secret = env('E2E_SECRET');
  await palette(page, 'speedpatch: Set API key');
  const box = page.locator('.quick-input-widget input[type="password"]');
  await box.waitFor({ state: 'visible', timeout: 15000 });
  await box.fill(secret);
  await page.keyboard.press('Enter');
  const sent = await waitForText(page, '.part.panel .view-lines', /settings changed: .*"apiKey":"<set>"/, 30000, 'the masked key sent to the server');
  step(`settings pushed: ${sent.slice(sent.indexOf('settings changed'), sent.indexOf('settings changed') + 200)}`);
  const body = normalise(await page.locator('body').innerText());
  if (body.includes(secret)) throw new Error('the API key is visible in the workbench');
}

async function scenarioOptimize(page) {
  await openFile(page, FILE);
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens');
  // The cursor starts at the top of the file, outside the kernel: the command offers the file's kernel.
  await palette(page, 'speedpatch: Optimize kernel at cursor');
  const progress = await waitForText(
    page, '.codelens-decoration', /searching|queued|x faster/, STARTUP_TIMEOUT, 'the search starting', /no faster version found|cannot optimize/,
  );
  step(`lens while searching: ${progress}`);
  // A search of minutes is announced where it is seen: a progress notification with the elapsed time and Cancel.
  const notice = await waitForText(
    page, '.notifications-toasts .notification-list-item', /speedpatch: optimizing \w+/, STARTUP_TIMEOUT,
    'the progress notification', /can run \d+\.\d+x faster|no faster version/,
  );
  step(`progress notification: ${notice}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'searching.png') });
  const done = await waitForText(
    page, '.codelens-decoration', /\d+\.\d+x faster/, SEARCH_TIMEOUT, 'the speedup code lens', /no faster version found/,
  );
  step(`lens after the search: ${done}`);
  const status = await waitForText(page, '.statusbar-item', /best \d+\.\d+x/, 15000, 'the best speedup in the status bar');
  step(`status bar: ${status}`);

  // The finished search says so with its two next steps as buttons (window/showMessageRequest).
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /can run \d+\.\d+x faster/, 30000, 'the result message',
  );
  step(`result message: ${toast}`);
  const button = (label) => page.locator('.notifications-toasts .monaco-button', { hasText: new RegExp(`^${label}$`) }).first();
  await button('Show diff').waitFor({ state: 'visible', timeout: 15000 });
  await button('Apply').waitFor({ state: 'visible', timeout: 15000 });
  // The inlay hint is a few words, says the figure is a model's, needs no emoji font, and sits before the
  // signature (at the line's end it was cut under the minimap).
  const hintLine = await waitForText(
    page, '.view-lines .view-line', /^\s*\d+\.\d+x faster \(model\)\s*void matmul_kernel\(/, 15000, 'the short inlay hint before the signature',
  );
  step(`signature line with its hint: ${hintLine.slice(0, 80)}`);
  if (hintLine.includes('\u23f1')) throw new Error(`the inlay hint still has the stopwatch emoji: ${hintLine}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'result.png') });
  // Hovering the kernel's signature tells how the figure was measured (the receipt).
  await page.locator('.editor-instance .view-line span', { hasText: /^matmul_kernel$/ }).first().hover();
  const hover = await waitForText(page, '.monaco-hover', /How it was measured/, 30000, 'the hover with the receipt');
  // what the hint leaves out: the figures before and after, and the backend that measured them
  if (!/[\d,]+ -> [\d,]+ cycles \(gemmini-native, run/.test(hover)) throw new Error(`the hover lacks the figures and backend: ${hover}`);
  step(`hover: ${hover.slice(0, 160)}…`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'hover.png') });
  await page.mouse.move(5, 5);

  // The message's "Show diff" runs the server's showDiff; its openDiff notification makes the extension open it.
  step('click "Show diff" on the result message');
  await button('Show diff').click();
  await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 30000 });
  const tab = await waitForText(page, '.tab', /\d+\.\d+x faster/, 15000, 'the diff tab titled with the speedup');
  step(`diff editor open: ${tab}`);
  // Both sides rendered, and the rewrite shows as inserted text on the modified side.
  await waitForText(page, '.monaco-diff-editor .editor.modified .view-lines', /matmul_kernel/, 30000, 'the rewrite in the diff');
  await page.locator('.monaco-diff-editor .editor.modified .line-insert, .monaco-diff-editor .editor.modified .char-insert').first().waitFor({ timeout: 15000 });
  // The diff editor's title has Accept and Discard; Accept applies the rewrite and closes the diff.
  const accept = page.locator('.editor-actions .action-label[aria-label*="Accept rewrite"]').first();
  await accept.waitFor({ state: 'visible', timeout: 15000 });
  await page.locator('.editor-actions .action-label[aria-label*="Discard rewrite"]').first().waitFor({ state: 'visible', timeout: 15000 });
  await page.screenshot({ path: path.join(ARTIFACTS, 'diff.png') });
  step('click Accept in the diff editor title');
  await accept.click();
  // Accept closes the diff and applies; the server then shows the file, focused (window/showDocument). The
  // lens follows the edit (its didChange makes the server send workspace/codeLens/refresh), but VS Code drops
  // a pending lens request when the editor loses focus: so nothing is clicked here (clicking the Explorer to
  // reopen the file lost that race under load), only the events are waited on, each in turn.
  const confirmed = await waitForText(
    page, '.notifications-toasts .notification-list-item', /applied \w+ rewrite; save to accept and re-verify it/,
    STARTUP_TIMEOUT, 'the apply confirmation', /not applied|refused the edit/,
  );
  step(`apply confirmed: ${confirmed}`);
  await page.locator('.tab.active', { hasText: new RegExp(`^${escapeRegExp(FILE)}$`) }).first().waitFor({ timeout: STARTUP_TIMEOUT });
  await page.locator('.editor-instance .monaco-editor.focused').first().waitFor({ timeout: STARTUP_TIMEOUT });
  const applied = await waitForText(page, '.codelens-decoration', /save to re-verify/, STARTUP_TIMEOUT, 'the applied (unsaved) lens');
  step(`lens after Accept: ${applied}`);
  const unsaved = await texts(page, '.codelens-decoration');
  if (!unsaved.some((t) => /Show diff/.test(t))) throw new Error(`an unsaved applied rewrite should still offer "Show diff": ${unsaved}`);
  step('save (Ctrl+S)');
  await page.keyboard.press('Control+S');
  const verified = await waitForText(
    page, '.codelens-decoration', /^verified .*\d+\.\d+x faster/, SEARCH_TIMEOUT, 'the re-verified lens', /speedpatch warning/,
  );
  step(`re-verified: ${verified}`);
  const lensesNow = await texts(page, '.codelens-decoration');
  if (lensesNow.some((t) => /Show diff/.test(t))) throw new Error(`"Show diff" is still offered after the save: ${lensesNow}`);
  const hint = await waitForText(page, '.view-lines', /re-measured/, 15000, 'the re-measured inlay hint');
  const at = hint.indexOf('re-measured');
  step(`inlay hint: …${hint.slice(Math.max(0, at - 60), at + 60)}…`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'verified.png') });

  // The Runs view lists the run; the report shows the chart and the beam tree with plans.
  await palette(page, 'speedpatch: Show runs');
  const row = await waitForText(page, '.pane-body .monaco-list-row', /\d+\.\d+x/, 15000, 'the run in the Runs view');
  step(`runs view: ${row}`);
  // Expanding the run lists its candidates; clicking one opens its diff.
  await page.locator('.pane-body .monaco-list-row', { hasText: /\d+\.\d+x/ }).first().click();
  const candidate = page.locator('.pane-body .monaco-list-row', { hasText: /cycles \(\d+\.\d+x\)/ }).first();
  await candidate.waitFor({ state: 'visible', timeout: 30000 });
  step(`candidate row: ${normalise(await candidate.innerText()).replace(/\s+/g, ' ')}`);
  await candidate.click();
  await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 30000 });
  await waitForText(page, '.tab.active', /\d+\.\d+x faster/, 15000, "the candidate's diff tab");
  await palette(page, 'speedpatch: Show run report');
  const report = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  await report.locator('svg.chart path.best').waitFor({ timeout: 30000 });
  const title = normalise(await report.locator('h2').innerText());
  const plans = await report.locator('.tree .plan').count();
  step(`report: "${title}", ${plans} candidates in the beam tree`);
  if (!/\d+\.\d+x faster/.test(title) || plans < 2) throw new Error(`unexpected report: ${title}, ${plans} plans`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'report.png') });
}

/** Server pids written by the interpreter wrapper (one line per Python started through it). */
function serverPids() {
  const file = env('E2E_PID_FILE');
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];
}

async function scenarioCrash(page) {
  await openFile(page, FILE);
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens');
  const before = serverPids();
  const victim = before[before.length - 1];
  step(`killing the language server (pid ${victim}) as a crash would`);
  process.kill(victim, 'SIGKILL');
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /stopped unexpectedly and was restarted/, 30000, 'the crash message',
  );
  step(`notification: ${toast}`);
  const deadline = Date.now() + STARTUP_TIMEOUT;
  while (serverPids().length <= before.length) {
    if (Date.now() > deadline) throw new Error('no new server process after the crash');
    await page.waitForTimeout(250);
  }
  step(`restarted as pid ${serverPids().at(-1)}`);
  // The restarted server serves the editor again: the lens comes back after an edit forces a refresh.
  await page.locator('.editor-instance .monaco-editor .view-lines').first().click();
  await page.keyboard.press('End');
  await page.keyboard.type(' ');
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens from the new server');
  await showOutput(page, /the server stopped unexpectedly \(crash 1\); restarting it/);
}

async function scenarioMissingPackage(page) {
  await openFile(page, FILE);
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /speedpatch Python package is not installed/, STARTUP_TIMEOUT, 'the install prompt',
  );
  step(`notification: ${toast}`);
  const button = page.locator('.notifications-toasts .monaco-button', { hasText: 'Install bundled package' });
  await button.first().waitFor({ state: 'visible', timeout: 5000 });
  step('the prompt offers to install the bundled package');
}

async function scenarioMultiRoot(page) {
  const folder = env('E2E_RUN_FOLDER');
  await expandRoot(page, folder);
  await openFile(page, FILE);
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens');
  await palette(page, 'speedpatch: Optimize kernel at cursor');
  const done = await waitForText(
    page, '.codelens-decoration', /\d+\.\d+x faster/, SEARCH_TIMEOUT, 'the speedup code lens', /no faster version found|cannot optimize/,
  );
  step(`lens after the search: ${done}`);
  // Several folders are open: the run's row names the folder it belongs to (" · <folder>" in its description).
  await palette(page, 'speedpatch: Show runs');
  const labelled = new RegExp(`\\d+\\.\\d+x .* · ${escapeRegExp(folder)}$`);
  const row = await waitForText(
    page, '.pane-body .monaco-list-row .label-description', labelled, 15000, `the run labelled "${folder}" in the Runs view`,
  );
  step(`runs view: ${row}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'runs.png') });
}

/** A typo that breaks the kernel file: the lens and a squiggle say where, and Optimize says why it cannot. */
async function scenarioDoesNotParse(page) {
  await openFile(page, FILE);
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens');
  const line = page.locator('.editor-instance .view-line', { hasText: 'tiled_matmul_auto(' }).first();
  await line.click();
  await page.keyboard.press('End');
  await page.keyboard.type(' ) (');
  const lens = await waitForText(
    page, '.codelens-decoration', /cannot optimize \w+: the file does not parse \(line \d+/, 30000, 'the does-not-parse lens',
  );
  step(`lens: ${lens}`);
  await page.locator('.squiggly-warning').first().waitFor({ state: 'visible', timeout: 15000 });
  await palette(page, 'speedpatch: Optimize kernel at cursor');
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /does not parse as C.*cannot be optimized until it does/, 15000,
    'the reason nothing can be optimized', /see the code lens/,
  );
  step(`notification: ${toast}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'does-not-parse.png') });
}

/** A CUDA kernel on a machine with no GPU: a short lens names its __global__ kernel and offers the way forward,
 * which writes the cuda-ssh set-up into speedpatch.toml and opens it where the host goes. */
async function scenarioNoGpu(page) {
  await openFile(page, FILE);
  const lens = await waitForText(page, '.codelens-decoration', /speedpatch: no GPU here to time \w+/, STARTUP_TIMEOUT, 'the no-GPU lens');
  step(`lens: ${lens}`);
  if (!/Configure a GPU backend…/.test(lens)) throw new Error(`no "Configure a GPU backend…" beside it: ${lens}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'no-gpu.png') });
  await clickLens(page, /Configure a GPU backend/);
  await page.locator('.tab.active', { hasText: /^speedpatch\.toml$/ }).first().waitFor({ timeout: STARTUP_TIMEOUT });
  await waitForText(page, '.editor-instance .view-lines', /\[backend\.cuda-ssh\]/, 15000, 'the cuda-ssh table in speedpatch.toml');
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /set host = .* under \[backend\.cuda-ssh\]/, 15000, 'what to fill in',
  );
  step(`notification: ${toast}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'configure-gpu.png') });
}

/** A kernel that parses but does not compile: Optimize says the user's own code is the problem, where. */
async function scenarioBaselineFails(page) {
  await openFile(page, FILE);
  await waitForText(page, '.codelens-decoration', /Optimize \w+/, STARTUP_TIMEOUT, 'the Optimize code lens');
  const line = page.locator('.editor-instance .view-line', { hasText: 'tiled_matmul_auto(' }).first();
  await line.click();
  await page.keyboard.press('Home');
  await page.keyboard.type('(void)undeclared_e2e; ');
  await palette(page, 'speedpatch: Optimize kernel at cursor');
  const lens = await waitForText(
    page, '.codelens-decoration', /\w+ does not compile \(run \w+\); see Problems/, SEARCH_TIMEOUT, 'the does-not-compile lens',
    /x faster|no faster version found/,
  );
  step(`lens: ${lens}`);
  // the compiler's error is a squiggle on the user's line, not a message about a scratch folder
  await page.locator('.squiggly-error').first().waitFor({ state: 'visible', timeout: 30000 });
  const toast = await waitForText(
    page, '.notifications-toasts .notification-list-item', /\w+ does not compile: \S+ line \d+: .*undeclared_e2e.*; see Problems/, 30000,
    'the failure message',
  );
  step(`notification: ${toast}`);
  if (/speedpatch-eval|\/tmp\//.test(toast)) throw new Error(`the message names a scratch path: ${toast}`);
  await page.screenshot({ path: path.join(ARTIFACTS, 'baseline-fails.png') });
}

const SCENARIOS = {
  baselineFails: scenarioBaselineFails,
  noGpu: scenarioNoGpu,
  doesNotParse: scenarioDoesNotParse,
  activate: scenarioActivate,
  optimize: scenarioOptimize,
  crash: scenarioCrash,
  missing: scenarioMissingPackage,
  multiroot: scenarioMultiRoot,
};

async function main() {
  const scenario = SCENARIOS[SCENARIO];
  if (!scenario) throw new Error(`unknown scenario ${SCENARIO}`);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const consoleLines = [];
  page.on('console', (msg) => consoleLines.push(`${msg.type()}: ${msg.text()}`));
  let failure;
  try {
    step(`open ${URL} on ${WORKSPACE ?? FOLDER}`);
    const opened = WORKSPACE ? `workspace=${encodeURIComponent(WORKSPACE)}` : `folder=${encodeURIComponent(FOLDER)}`;
    await page.goto(`${URL}/?${opened}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: STARTUP_TIMEOUT });
    step('workbench rendered');
    await scenario(page);
    step('passed');
  } catch (error) {
    failure = error;
    console.log(`FAILED: ${error instanceof Error ? error.stack : error}`);
    // CI keeps only this output, not the artifacts: the visible page's text says most about what went wrong.
    const shown = normalise(await page.locator('body').innerText().catch(() => ''));
    console.log(`page text at the failure: ${shown.slice(0, 2000)}`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'failure.png') }).catch(() => undefined);
    fs.writeFileSync(path.join(ARTIFACTS, 'page.txt'), shown);
    // The extension's own log helps most: show it and keep a second screenshot with it open.
    await showOutput(page, /\[(info|error)\]/).catch(() => undefined);
    await page.screenshot({ path: path.join(ARTIFACTS, 'failure-output.png') }).catch(() => undefined);
    fs.writeFileSync(path.join(ARTIFACTS, 'output-panel.txt'), (await texts(page, '.part.panel .view-line').catch(() => [])).join('\n'));
  } finally {
    fs.writeFileSync(path.join(ARTIFACTS, 'browser-console.txt'), consoleLines.join('\n'));
    await browser.close();
  }
  process.exit(failure ? 1 : 0);
}

main().catch((error) => {
  console.log(`FAILED: ${error instanceof Error ? error.stack : error}`);
  process.exit(1);
});
