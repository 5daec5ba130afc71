// A small MCP server on the official TypeScript SDK with two task tools, for
// andon's interop tests (internal/interop/tasks_node_test.go):
//
//   work  (taskSupport required): works in 50ms steps for 60s; each step it
//         reads the task's status, and when it finds the task cancelled
//         (the SDK moves it there on tasks/cancel) it logs
//         "ANDON_WORK_CANCELLED <taskId>" on stderr and stops.
//   quick (taskSupport required): completes after 200ms with "quick done".
//
// Every line it logs on stderr starts with ANDON_; "ANDON_WORK_STARTED
// <taskId>" marks a task whose work began.
//
// Usage: node tasks_sdk_server.mjs stdio
//        node tasks_sdk_server.mjs http   (listens on 127.0.0.1, a free
//        port, printed as "ANDON_LISTENING <port>"; /mcp, with sessions)
//
// Over HTTP every session shares one task store, which ignores the session
// a task was created in: a task one client created can be got and
// cancelled by another, as a durable handle should be.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from "@modelcontextprotocol/sdk/experimental/tasks";

const log = (line) => process.stderr.write(`ANDON_${line}\n`);

class SharedTaskStore extends InMemoryTaskStore {
  createTask(params, requestId, request) { return super.createTask(params, requestId, request); }
  getTask(taskId) { return super.getTask(taskId); }
  storeTaskResult(taskId, status, result) { return super.storeTaskResult(taskId, status, result); }
  getTaskResult(taskId) { return super.getTaskResult(taskId); }
  updateTaskStatus(taskId, status, message) { return super.updateTaskStatus(taskId, status, message); }
  listTasks(cursor) { return super.listTasks(cursor); }
}

const taskStore = new SharedTaskStore();
const taskMessageQueue = new InMemoryTaskMessageQueue();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function work(taskId) {
  log(`WORK_STARTED ${taskId}`);
  for (let i = 0; i < 1200; i++) {
    await sleep(50);
    const task = await taskStore.getTask(taskId);
    if (!task || task.status === "cancelled") {
      log(`WORK_CANCELLED ${taskId}`);
      return;
    }
  }
  await taskStore.storeTaskResult(taskId, "completed", { content: [{ type: "text", text: "work done" }] });
}

function newServer() {
  const server = new McpServer(
    { name: "andon-interop-tasks", version: "1.0.0" },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue,
    },
  );
  const handler = (run) => ({
    createTask: async (extra) => {
      const task = await extra.taskStore.createTask({ ttl: 300000, pollInterval: 100 });
      run(task.taskId).catch((e) => log(`WORK_FAILED ${task.taskId} ${e}`));
      return { task };
    },
    getTask: async (extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (extra) => extra.taskStore.getTaskResult(extra.taskId),
  });
  server.experimental.tasks.registerToolTask(
    "work",
    { description: "Works for 60s as a task; logs when it is cancelled.", execution: { taskSupport: "required" } },
    handler(work),
  );
  server.experimental.tasks.registerToolTask(
    "quick",
    { description: "Completes after 200ms.", execution: { taskSupport: "required" } },
    handler(async (taskId) => {
      await sleep(200);
      await taskStore.storeTaskResult(taskId, "completed", { content: [{ type: "text", text: "quick done" }] });
    }),
  );
  return server;
}

if (process.argv[2] === "http") {
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid || req.method !== "POST") {
        res.writeHead(404).end();
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  httpServer.listen(0, "127.0.0.1", () => log(`LISTENING ${httpServer.address().port}`));
} else {
  await newServer().connect(new StdioServerTransport());
}
