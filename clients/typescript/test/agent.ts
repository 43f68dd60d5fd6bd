// One turn of an agent whose history is kept in the store: run as a
// process of its own by the tests (node dist/test/agent.js SOCKET ID TEXT),
// it prints the session's items as JSON.
import { Agent, run, tool } from '@openai/agents';
import { FakeModel } from './fakemodel.js';
import { StoreSession, Client } from '../src/index.js';

export const lookup = tool({
  name: 'lookup',
  description: 'Where an animal lives',
  parameters: { type: 'object', properties: { animal: { type: 'string' } }, required: ['animal'], additionalProperties: false },
  strict: true,
  execute: async (input: unknown) => ({ zebra: 'savanna', okapi: 'rainforest' } as Record<string, string>)[(input as { animal: string }).animal] ?? 'nowhere',
});

export async function turn(socketPath: string, id: string, text: string) {
  const model = new FakeModel();
  const agent = new Agent({ name: 'zookeeper', instructions: 'Answer about animals.', model, tools: [lookup] });
  const session = new StoreSession(id, { client: new Client({ socketPath }), holder: 'zookeeper' });
  try {
    const result = await run(agent, text, { session });
    return { finalOutput: result.finalOutput as string, seen: model.seen, items: await session.getItems() };
  } finally {
    await session.close();
    session.client.close();
  }
}

if (process.argv[1]?.endsWith('agent.js') && process.argv.length === 5) {
  const [socketPath, id, text] = process.argv.slice(2);
  turn(socketPath, id, text).then((r) => process.stdout.write(JSON.stringify(r)), (e) => {
    console.error(e);
    process.exit(1);
  });
}
