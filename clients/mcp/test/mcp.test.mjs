// `sessions mcp` tested with the official TypeScript MCP client
// (@modelcontextprotocol/sdk): the client spawns the built command over
// stdio, as an agent's MCP client does, on a store whose sessions the CLI
// wrote (`sessions new`, `sessions append`). SESSIONS_BIN names the
// binary (make test-mcp builds it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = process.env.SESSIONS_BIN;
if (!bin) throw new Error('SESSIONS_BIN must name the sessions binary (make test-mcp sets it)');

let dir;
let client;
let transport;
const ids = {};

// sessions runs the CLI on the test's store.
function sessions(args, input) {
  return execFileSync(bin, ['--dir', dir, ...args], { input, encoding: 'utf8' }).trim();
}

// addSession writes a session of messages through the CLI.
function addSession(title, project, texts) {
  const id = sessions(['new', '--title', title, '--project', project]);
  const lines = texts.map((text, i) => JSON.stringify({
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text }],
    created_at: `2026-11-29T12:00:0${i}Z`,
  }));
  sessions(['append', id], lines.join('\n') + '\n');
  return id;
}

// call calls a tool and returns its result.
function call(name, args) {
  return client.callTool({ name, arguments: args });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sessions-mcp-'));
  sessions(['new', '--title', 'create the store']); // `new` creates a missing store
  ids.long = addSession('long', '/src/gamma', Array.from({ length: 8 }, (_, i) => `paragraph ${i} `.repeat(40)));
  ids.parser = addSession('tab bug', '/src/alpha', [
    'why does the parser reject tabs',
    'the lexer treats a tab as an invalid rune; fixed in lexer.go',
  ]);
  ids.deploy = addSession('deploy', '/src/beta', [
    'deploy the frobnicator to staging',
    'deployed; the parser was not involved',
  ]);
  transport = new StdioClientTransport({ command: bin, args: ['mcp', '--dir', dir], stderr: 'inherit' });
  client = new Client({ name: 'sessionstore-test', version: '0.1.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the server names itself and lists its read-only tools', async () => {
  assert.equal(client.getServerVersion()?.name, 'sessionstore');
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['list_sessions', 'read_message', 'read_session', 'search_sessions']);
  for (const t of tools) {
    assert.equal(t.annotations?.readOnlyHint, true, `${t.name} is read-only`);
    assert.equal(t.inputSchema.type, 'object');
  }
  const search = tools.find((t) => t.name === 'search_sessions');
  assert.deepEqual(search.inputSchema.required, ['query']);
});

test('search finds the message where words were said', async () => {
  const res = await call('search_sessions', { query: 'lexer tab' });
  assert.equal(res.isError, undefined);
  const { hits, more } = res.structuredContent;
  assert.equal(hits.length, 1);
  assert.equal(hits[0].session, ids.parser);
  assert.equal(hits[0].message, 1);
  assert.equal(hits[0].role, 'assistant');
  assert.match(hits[0].snippet, /«lexer»/);
  assert.equal(more, undefined);
  // The text content carries the same JSON, for clients that read text.
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);

  const both = await call('search_sessions', { query: 'parser' });
  assert.deepEqual(both.structuredContent.hits.map((h) => h.session).sort(), [ids.parser, ids.deploy].sort());
  const one = await call('search_sessions', { query: 'parser', project: '/src/beta' });
  assert.deepEqual(one.structuredContent.hits.map((h) => h.session), [ids.deploy]);
  const limited = await call('search_sessions', { query: 'parser', limit: 1 });
  assert.equal(limited.structuredContent.hits.length, 1);
  assert.equal(limited.structuredContent.more, true);
});

test('list gives the newest session first', async () => {
  const res = await call('list_sessions', { limit: 2 });
  const { sessions: list, more } = res.structuredContent;
  assert.deepEqual(list.map((s) => s.id), [ids.deploy, ids.parser]);
  assert.equal(list[0].messages, 2);
  assert.equal(list[0].project, '/src/beta');
  assert.equal(more, true, 'the first session, which created the store, is left out');
});

test('read_session is the Markdown show --format markdown prints', async () => {
  const res = await call('read_session', { id: ids.parser.toLowerCase().slice(0, 20) });
  assert.equal(res.isError, undefined);
  assert.equal(res.content.length, 1, 'nothing was cut');
  assert.equal(res.content[0].text, sessions(['show', ids.parser, '--format', 'markdown']) + '\n');
  assert.match(res.content[0].text, /^# tab bug\n/);
});

test('read_session reads a long session in pages of whole messages', async () => {
  let from = 0;
  const pages = [];
  for (;;) {
    const res = await call('read_session', { id: ids.long, from_message: from, max_bytes: 1024 });
    assert.equal(res.isError, undefined);
    assert.equal(res.content.length, 2, 'the Markdown and a note');
    assert.ok(res.content[0].text.length <= 1024);
    pages.push(res.content[0].text);
    const note = res.content[1].text;
    if (note.includes('the end of the session')) break;
    const next = Number(/from_message (\d+)/.exec(note)?.[1]);
    assert.ok(next > from, note);
    from = next;
  }
  assert.ok(pages.length > 1);
  const all = pages.join('');
  for (let i = 0; i < 8; i++) {
    assert.equal(all.split(`paragraph ${i} `.repeat(40)).length, 2, `message ${i} is in one page, whole`);
  }
});

test('read_message reads one message', async () => {
  const res = await call('read_message', { id: ids.parser, index: 0 });
  const m = res.structuredContent;
  assert.equal(m.session, ids.parser);
  assert.equal(m.index, 0);
  assert.equal(m.messages, 2);
  assert.equal(m.role, 'user');
  assert.equal(m.created_at, '2026-11-29T12:00:00Z');
  assert.deepEqual(m.message.parts, [{ type: 'text', text: 'why does the parser reject tabs' }]);
});

test('failures are tool errors, and the connection goes on', async () => {
  const cases = [
    ['read_session', { id: '01ZZZZZZZZ' }, /no session "01ZZZZZZZZ"/],
    ['read_session', { id: '../../etc/passwd' }, /invalid session id/],
    ['read_message', { id: ids.parser, index: 7 }, /has 2 messages \(0 to 1\)/],
    ['search_sessions', { query: '' }, /bad search query/],
    ['list_sessions', { states: ['sleeping'] }, /unknown state "sleeping"/],
  ];
  for (const [name, args, want] of cases) {
    const res = await call(name, args);
    assert.equal(res.isError, true, `${name} ${JSON.stringify(args)}`);
    assert.match(res.content[0].text, want);
  }
  const res = await call('search_sessions', { query: 'frobnicator' });
  assert.equal(res.structuredContent.hits[0].session, ids.deploy);
});
