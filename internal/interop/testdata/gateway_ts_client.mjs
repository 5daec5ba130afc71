// A client of andon's gateway built on the official TypeScript SDK
// (@modelcontextprotocol/sdk), driven by the Go test one command at a time.
// Usage:
//   node gateway_ts_client.mjs stdio   MCP on this process's stdin and stdout
//   node gateway_ts_client.mjs URL     Streamable HTTP to URL
// ANDON_GW_PLAN is JSON {echo: {name, arguments}, slow: {name, arguments}}.
// Commands arrive as lines on fd 3: tools, echo, slow, abort, exit. Each is
// answered by a line "ANDON_TS <what> <json>" on stderr.
import fs from "node:fs";
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// The SDK's stdio "server" transport is plain MCP framing on process.stdin
// and process.stdout; a Client works over it as over any transport.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const target = process.argv[2];
const plan = JSON.parse(process.env.ANDON_GW_PLAN);
const report = (what, v) => console.error(`ANDON_TS ${what} ${JSON.stringify(v ?? null)}`);

const client = new Client({ name: "interop-ts-client", version: "1" });
const transport = target === "stdio" ? new StdioServerTransport() : new StreamableHTTPClientTransport(new URL(target));
try {
  await client.connect(transport);
} catch (e) {
  report("error", { at: "connect", message: String(e?.message ?? e) });
  process.exit(1);
}
report("connected", { server: client.getServerVersion() });

const hour = { timeout: 3600000 };
let controller = null;
let slow = null;
const commands = readline.createInterface({ input: fs.createReadStream(null, { fd: 3 }) });
for await (const cmd of commands) {
  try {
    switch (cmd) {
      case "tools": {
        const res = await client.listTools(undefined, hour);
        report("tools", res.tools.map((t) => t.name));
        break;
      }
      case "echo": {
        const res = await client.callTool(plan.echo, undefined, hour);
        report("echo", res);
        break;
      }
      case "slow":
        controller = new AbortController();
        slow = client.callTool(plan.slow, undefined, { ...hour, signal: controller.signal });
        slow.then(
          (res) => report("slow-result", res),
          (e) => report("slow-error", { name: e?.name, message: String(e?.message ?? e) }),
        );
        report("slow-sent");
        break;
      case "abort":
        controller.abort("the test aborted the call");
        break;
      case "exit":
        await client.close();
        report("closed");
        process.exit(0);
    }
  } catch (e) {
    report("error", { at: cmd, message: String(e?.message ?? e) });
  }
}
// The test closed fd 3 without saying exit: go anyway.
await client.close();
process.exit(0);
