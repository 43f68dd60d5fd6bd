// A model that answers from a script, without a network: what the agent
// under test talks to.
import { Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';

/** FakeModel first calls the lookup tool for the animal in the last user
 * message, then answers with the tool's result and how many items of
 * history it was given. Its IDs follow the history's length, so that a
 * later turn's never repeat an earlier one's (the SDK keeps one item per
 * ID). */
export class FakeModel implements Model {
  calls = 0;
  seen: number[] = [];

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.calls++;
    const input = Array.isArray(request.input) ? request.input : [{ role: 'user', content: request.input }];
    this.seen.push(input.length);
    const last = input[input.length - 1] as { type?: string; output?: unknown; role?: string; content?: unknown };
    let output: ModelResponse['output'];
    if (last.type === 'function_call_result') {
      const text = typeof last.output === 'string' ? last.output : (last.output as { text?: string }).text;
      output = [{
        type: 'message', role: 'assistant', status: 'completed', id: `msg_${input.length}`,
        content: [{ type: 'output_text', text: `Found: ${text}. I was given ${input.length} items.` }],
      }];
    } else {
      const said = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
      const animal = /zebra|okapi/.exec(said)?.[0] ?? 'unknown';
      output = [{
        type: 'function_call', callId: `call_${input.length}`, name: 'lookup', status: 'completed', id: `fc_${input.length}`,
        arguments: JSON.stringify({ animal }),
      }];
    }
    return { usage: new Usage(), output, responseId: `resp_${input.length}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('FakeModel does not stream');
  }
}
