// The tools and the prompt that the 2026-07-28 requirement set calls by
// name and that the 0.1.16 everything-server predates, written as a
// 2025-era server writes them with the TypeScript SDK 1.x: a request to
// the client in the middle of the call (extra.sendRequest), awaited, then
// the answer. reference.sh adds them (serve.mjs --with-2026-tools) so that
// the set's input_required scenarios run through mcpvisor's bridge in
// front of the SDK's own server code; demo/conformance-asks.c is the C
// fixture's version of the same tools. One difference is the SDK's: its
// requests' ids are numbers, where the suite's basic-elicitation scenario
// expects the input named "user_name" (its reference server picks the
// names); a gateway can only name an input after the request it stands for.
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ListRootsResultSchema
} from '@modelcontextprotocol/sdk/types.js';

const CAPS = 'io.modelcontextprotocol/clientCapabilities';

const text = (t) => ({ content: [{ type: 'text', text: t }] });

const ask = {
  elicit: (extra, message, field, type) =>
    extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          message,
          requestedSchema: {
            type: 'object',
            properties: { [field]: { type } },
            required: [field]
          }
        }
      },
      ElicitResultSchema
    ),
  sample: (extra, prompt, maxTokens) =>
    extra.sendRequest(
      {
        method: 'sampling/createMessage',
        params: {
          messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
          maxTokens
        }
      },
      CreateMessageResultSchema
    ),
  roots: (extra) =>
    extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema)
};

const said = {
  elicit: (r) =>
    r.action === 'accept'
      ? `Hello, ${r.content?.name ?? JSON.stringify(r.content)}!`
      : `Elicitation ${r.action}`,
  sample: (r) =>
    `The model said: ${r.content?.type === 'text' ? r.content.text : '?'}`,
  roots: (r) => `Roots: ${r.roots.map((x) => x.uri).join(', ') || '(none)'}`
};

// What this request's client declared: the 2026-07-28 request's _meta when
// a gateway forwards it, else what it said at initialize.
function declared(mcpServer, extra) {
  const m = extra._meta?.[CAPS];
  return m && typeof m === 'object'
    ? m
    : (mcpServer.server.getClientCapabilities() ?? {});
}

export function addTools2026(mcpServer) {
  const tool = (name, description, fn) =>
    mcpServer.registerTool(name, { description, inputSchema: {} }, fn);

  // The same question under each name the set calls it by.
  const askName = async (_a, extra) =>
    text(said.elicit(await ask.elicit(extra, 'What is your name?', 'name', 'string')));
  const askCapital = async (_a, extra) =>
    text(said.sample(await ask.sample(extra, 'What is the capital of France?', 100)));
  tool('test_input_required_result_elicitation', 'Asks the user their name mid-call', askName);
  tool('test_streaming_elicitation', 'Asks the user their name mid-call', askName);
  tool('test_input_required_result_sampling', "Asks the client's model a question mid-call", askCapital);
  tool('test_missing_capability', 'Asks sampling whatever the client declared', askCapital);
  tool(
    'test_input_required_result_list_roots',
    "Asks the client's roots mid-call",
    async (_a, extra) => text(said.roots(await ask.roots(extra)))
  );
  for (const name of [
    'test_input_required_result_request_state',
    'test_input_required_result_tampered_state'
  ]) {
    tool(name, 'Asks the user to confirm, then answers state-ok', async (_a, extra) => {
      const r = await ask.elicit(extra, 'Please confirm', 'ok', 'boolean');
      return text(`state-ok (${r.action})`);
    });
  }
  tool(
    'test_input_required_result_multiple_inputs',
    'Asks elicitation, sampling and roots at once',
    async (_a, extra) => {
      const [e, s, r] = await Promise.all([
        ask.elicit(extra, 'What is your name?', 'name', 'string'),
        ask.sample(extra, 'Generate a greeting', 50),
        ask.roots(extra)
      ]);
      return text([said.elicit(e), said.sample(s), said.roots(r)].join('\n'));
    }
  );
  tool(
    'test_input_required_result_multi_round',
    'Asks a name, then a colour',
    async (_a, extra) => {
      const one = await ask.elicit(extra, 'Step 1: What is your name?', 'name', 'string');
      const two = await ask.elicit(extra, 'Step 2: What is your favorite color?', 'color', 'string');
      return text(`${one.content?.name} likes ${two.content?.color}.`);
    }
  );
  tool(
    'test_input_required_result_capabilities',
    'Asks elicitation, sampling and roots, each only if declared',
    async (_a, extra) => {
      const caps = declared(mcpServer, extra);
      const out = [];
      if (caps.elicitation)
        out.push(said.elicit(await ask.elicit(extra, 'What is your name?', 'name', 'string')));
      if (caps.sampling)
        out.push(said.sample(await ask.sample(extra, 'What is the capital of France?', 100)));
      if (caps.roots) out.push(said.roots(await ask.roots(extra)));
      return text(out.join('\n') || 'The client declared none of them');
    }
  );
  tool(
    'test_logging_tool',
    'Logs at debug, info, warning and error, then answers',
    async (_a, extra) => {
      for (const level of ['debug', 'info', 'warning', 'error'])
        await mcpServer.sendLoggingMessage(
          { level, data: `test_logging_tool: a ${level} message` },
          extra.sessionId
        );
      return text('Logged at debug, info, warning and error');
    }
  );
  let triggered = null;
  tool('test_trigger_tool_change', 'Adds or removes test_triggered_tool', async () => {
    if (triggered) {
      triggered.remove();
      triggered = null;
      return text('test_triggered_tool removed');
    }
    triggered = tool('test_triggered_tool', 'Listed while triggered', async () =>
      text('The triggered tool is available.')
    );
    return text('test_triggered_tool added');
  });
  let prompt = null;
  tool('test_trigger_prompt_change', 'Adds or removes test_triggered_prompt', async () => {
    if (prompt) {
      prompt.remove();
      prompt = null;
      return text('test_triggered_prompt removed');
    }
    prompt = mcpServer.registerPrompt(
      'test_triggered_prompt',
      { description: 'Listed while triggered' },
      async () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'Triggered.' } }]
      })
    );
    return text('test_triggered_prompt added');
  });
  mcpServer.registerPrompt(
    'test_input_required_result_prompt',
    { description: 'Asks the user for a context, then answers with it' },
    async (extra) => {
      const r = await ask.elicit(extra, 'What context should the prompt use?', 'context', 'string');
      return {
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Context: ${r.content?.context ?? r.action}` }
          }
        ]
      };
    }
  );
}
