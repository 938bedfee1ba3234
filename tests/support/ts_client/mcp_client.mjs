// The TypeScript SDK's client (@modelcontextprotocol/sdk v1, the handshake era) against a gateway,
// for tests/gateway/doors/mcp/test_ts_client.py. Usage: node mcp_client.mjs <scenario> <url> [json]
// with TS_SDK naming the SDK's package folder and AGENTBOX_KEY an optional bearer key. Each scenario
// prints JSON lines: what the client saw, for the Python test to check.
const [scenario, url, rawArgs] = process.argv.slice(2);
const args = rawArgs ? JSON.parse(rawArgs) : {};
const sdk = process.env.TS_SDK;
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);
const types = await import(`${sdk}/dist/esm/types.js`);

const print = (value) => process.stdout.write(JSON.stringify(value) + "\n");

async function connect() {
  const headers = process.env.AGENTBOX_KEY ? { Authorization: `Bearer ${process.env.AGENTBOX_KEY}` } : {};
  const client = new Client({ name: "agentbox-ts-test", version: "1.0.0" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

const output = (task) => task._meta?.["dev.agentbox/output"]?.text ?? "";

const scenarios = {
  // callToolStream: the handle, the output while it runs, then (when args.cancelOn is printed) a cancel.
  async stream(client) {
    const tools = (await client.listTools()).tools;
    print({ taskSupport: tools.find((t) => t.name === args.tool)?.execution?.taskSupport ?? null,
            capabilities: client.getServerCapabilities() });
    const began = Date.now();
    let taskId;
    let cancelled = false;
    const stream = client.experimental.tasks.callToolStream({ name: args.tool, arguments: args.arguments });
    for await (const message of stream) {
      if (message.type === "taskCreated") {
        taskId = message.task.taskId;
        print({ created: message.task, ms: Date.now() - began });
      } else if (message.type === "taskStatus") {
        const seen = output(await client.experimental.tasks.getTask(taskId));
        print({ status: message.task.status, output: seen });
        if (args.cancelOn && !cancelled && seen.includes(args.cancelOn)) {
          cancelled = true;
          print({ cancel: await client.experimental.tasks.cancelTask(taskId) });
        }
      } else if (message.type === "result") {
        print({ result: message.result });
      } else if (message.type === "error") {
        print({ error: message.error.message });
      }
    }
  },
  // A task made with a plain request that returns at once (the connection then closed).
  async create(client) {
    const meta = args.key ? { "dev.agentbox/idempotency-key": args.key } : undefined;
    const answer = await client.request(
      { method: "tools/call", params: { name: args.tool, arguments: args.arguments, task: { ttl: 60000 }, _meta: meta } },
      types.CreateTaskResultSchema,
    );
    print(answer);
  },
  // Another connection waits for a task's result, then lists the tasks kept.
  async result(client) {
    print({ result: await client.experimental.tasks.getTaskResult(args.taskId, types.CallToolResultSchema) });
    print({ listed: (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId) });
  },
  // Prints every tools/list_changed notification (with the tool names listed then) until stdin closes.
  async listen(client) {
    client.setNotificationHandler(types.ToolListChangedNotificationSchema, async () => {
      print({ changed: (await client.listTools()).tools.map((t) => t.name) });
    });
    print({ listening: client.getServerCapabilities()?.tools?.listChanged ?? false });
    await new Promise((resolve) => process.stdin.on("close", resolve).resume());
  },
};

const client = await connect();
try {
  await scenarios[scenario](client);
} finally {
  await client.close();
}
