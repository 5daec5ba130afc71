// Runs a Node.js MCP server module that listens on all interfaces (such as
// @modelcontextprotocol/server-everything's streamableHttp transport, which
// calls app.listen(PORT)) on 127.0.0.1 only, and prints the port it got as
// "ANDON_LISTENING <port>" on stderr. Usage:
//   node tasks_listen_loopback.mjs MODULE [ARGS...]
import net from "node:net";
import { pathToFileURL } from "node:url";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const addr = this.address();
    if (addr && typeof addr === "object") {
      console.error(`ANDON_LISTENING ${addr.port}`);
    }
  });
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const callbacks = args.slice(1).filter((a) => typeof a === "function");
    return listen.call(this, Number(args[0]), "127.0.0.1", ...callbacks);
  }
  if (args[0] && typeof args[0] === "object" && !(args[0] instanceof net.Server)) {
    return listen.call(this, { ...args[0], host: "127.0.0.1" }, ...args.slice(1));
  }
  return listen.apply(this, args);
};

const [module, ...rest] = process.argv.slice(2);
process.argv = [process.argv[0], module, ...rest];
await import(pathToFileURL(module).href);
