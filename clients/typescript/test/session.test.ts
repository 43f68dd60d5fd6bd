import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Session } from '@openai/agents';
import { Client, ConflictError, ServerError, StoreSession } from '../src/index.js';
import { Server } from './harness.js';
import { turn } from './agent.js';

// Items of every shape the SDK adds, and JSON that trips careless codecs.
const ITEMS = [
  { role: 'user', content: 'Where is the zebra?' },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image: 'data:image/png;base64,iVBO', detail: 'auto' }] },
  { type: 'reasoning', id: 'rs_1', content: [{ type: 'input_text', text: 'stripes' }], providerData: { encrypted: 'gAAAA' } },
  { type: 'function_call', callId: 'call_1', name: 'lookup', arguments: '{"animal":"zebra"}', status: 'completed' },
  { type: 'function_call_result', callId: 'call_1', name: 'lookup', status: 'completed', output: { type: 'text', text: 'savanna' } },
  { type: 'message', role: 'assistant', status: 'completed', id: 'msg_1', content: [{ type: 'output_text', text: 'In the savanna.', annotations: [] }] },
  { type: 'x_future', big: 1e21, f: 1.5e300, neg: -0.25, u: 'é\u2028😀', esc: 'a"b\\c\n</script>', empty: {}, none: [], nil: null, deep: [[[{ a: [1, { b: true }] }]]] },
];

let server: Server;
let client: Client;
before(async () => {
  server = await new Server().start();
  client = new Client({ socketPath: server.socket });
});
after(async () => {
  client.close();
  assert.equal(await server.stop(), 0);
});

test('StoreSession is an Agents SDK Session', () => {
  const s: Session = new StoreSession('typed', { client });
  assert.ok(s);
});

test('items round-trip exactly, and their text is searchable', async () => {
  const s = new StoreSession('conv-1', { client });
  assert.deepEqual(await s.getItems(), []);
  await s.addItems(ITEMS.slice(0, 3));
  await s.addItems(ITEMS.slice(3));
  assert.deepEqual(await s.getItems(), ITEMS);
  assert.deepEqual(await s.getItems(2), ITEMS.slice(-2));
  for (const word of ['zebra', 'savanna', 'stripes']) {
    const hits = (await client.search(word)).hits;
    assert.equal(hits[0]?.id, 'conv-1', word);
  }
  assert.equal(await s.getSessionId(), 'conv-1');
  await s.close();
});

test('popItem and clearSession', async () => {
  const s = new StoreSession(undefined, { client });
  await s.addItems(ITEMS.slice(0, 2));
  assert.match(await s.getSessionId(), /^[0-9A-Z]{26}$/);
  assert.deepEqual(await s.popItem(), ITEMS[1]);
  assert.deepEqual(await s.getItems(), ITEMS.slice(0, 1));
  await s.clearSession();
  assert.deepEqual(await s.getItems(), []);
  assert.equal(await s.popItem(), undefined);
  await s.close();
});

test('one writer at a time; a handle ended resumes unless someone wrote', async () => {
  const a = new StoreSession('shared', { client, heartbeat: false });
  await a.addItems([ITEMS[0]]);
  const b = new StoreSession('shared', { client });
  await assert.rejects(b.addItems([ITEMS[1]]), (e: unknown) => e instanceof ServerError && e.status === 409 && e.code === 'lease_held');
  const cli = server.sessions(['append', 'shared'], '{"role":"user","parts":[{"type":"text","text":"x"}]}\n');
  assert.equal(cli.status, 1);
  assert.match(cli.stderr, /held by typescript-agents/);

  // As the server does to a silent client: the handle ends; nobody wrote, so a resumes.
  await client.release((a as unknown as { handle: string }).handle);
  await a.addItems([ITEMS[1]]);
  await client.release((a as unknown as { handle: string }).handle);
  assert.equal(server.sessions(['append', 'shared'], '{"role":"user","parts":[{"type":"text","text":"meanwhile"}]}\n').status, 0);
  await assert.rejects(a.addItems([ITEMS[2]]), ConflictError);
  assert.equal((await a.getItems()).length, 3);
  await a.close();
  await b.close();
});

test('an agent run keeps its history in the store, and a second process continues it', async () => {
  const first = await turn(server.socket, 'zoo', 'Where does the zebra live?');
  assert.equal(first.finalOutput, 'Found: savanna. I was given 3 items.');
  assert.deepEqual(first.seen, [1, 3]);
  const kinds = first.items.map((i: { type?: string; role?: string }) => i.type ?? i.role);
  assert.deepEqual(kinds, ['message', 'function_call', 'function_call_result', 'message']);

  // A second Node process resumes the session and runs the next turn on the whole history.
  const agentJs = fileURLToPath(new URL('./agent.js', import.meta.url));
  const out = execFileSync(process.execPath, [agentJs, server.socket, 'zoo', 'And the okapi?'], { encoding: 'utf8' });
  const second = JSON.parse(out);
  assert.equal(second.finalOutput, 'Found: rainforest. I was given 7 items.');
  assert.deepEqual(second.seen, [5, 7]);
  assert.equal(second.items.length, 8);
  assert.deepEqual(second.items.slice(0, 4), first.items, 'the first turn comes back exactly');
  const hits = (await client.search('rainforest')).hits;
  assert.equal(hits[0]?.id, 'zoo');
  assert.equal((await client.lease('zoo')).state, 'free', 'each process released the lease');
});
