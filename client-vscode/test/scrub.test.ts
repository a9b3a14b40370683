import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MASK, scrub, scrubbed, urlSecrets } from '../src/scrub';

class Channel {
  lines: string[] = [];
  logLevel = 1;
  appendLine(value: string): void {
    this.lines.push(value);
  }
  trace(message: string): void {
    this.lines.push(`[trace] ${message}`);
  }
}

test('a verbose trace of initialize written to the channel holds no API key', () => {
  const channel = new Channel();
  let key = 'sk-canary-0123456789abcdef';
  const out = scrubbed(channel, () => [key]);
  const params = { initializationOptions: { llm: { apiKey: key, models: ['m'] } } };
  out.trace(`Sending request 'initialize - (0)'.\nParams: ${JSON.stringify(params, null, 4)}`);
  key = 'sk-canary-the-new-key-42';  // set again in secret storage: the next writes scrub that one
  out.appendLine(`settings: ${JSON.stringify({ llm: { apiKey: key } })}`);
  assert.ok(channel.lines.every((line) => !line.includes('sk-canary')), channel.lines.join('\n'));
  assert.ok(channel.lines[0].includes(`"apiKey": "${MASK}"`));
  assert.equal(out.logLevel, 1);  // everything else is the channel's own
});

test('the credentials of a base URL are secrets, as written and decoded', () => {
  assert.deepEqual(urlSecrets('http://localhost:8000/v1'), []);
  const url = 'https://user:sk%2Dcanary-123456@llm.example/v1';
  assert.equal(scrub(`base URL ${url} key sk-canary-123456`, urlSecrets(url)),
    `base URL https://${MASK}@llm.example/v1 key ${MASK}`);
  assert.equal(scrub('https://sk-token-abcdef@host/v1', urlSecrets('https://sk-token-abcdef@host/v1')),
    `https://${MASK}@host/v1`);
});

test('short values are not scrubbed', () => {
  assert.equal(scrub('use true here', ['true']), 'use true here');
});
