// A real ACP client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0), for the
// peer tests of `acp-trace mock`. It starts AGENT, initializes (v1 or the experimental v2),
// resumes a session with replay (v2 `session/resume` with replayFrom start, v1 `session/load`)
// RESUMES times, answers permission requests with the first allowing option, and prints one
// JSON object: the initialize result, and per request its result or error and the updates
// the SDK delivered to the client's handler.
//
// The SDK 2.4.0 has no ClientSideConnection any more: `client({name})` registers handlers and
// `connect(stream)` gives the connection. Read core/jsonrpc.js before trusting the order of
// delivery: a response resolves its promise as soon as it is read, while each notification
// goes through an async chain of handlers, so the last updates before a response can reach the
// handler after `await request(...)` has returned. `at_response` counts what had been
// delivered by then; the counts after it come from a barrier: one more request the recording
// cannot answer (session/list), whose error comes after everything the mock sent before it
// (the mock answers one request at a time), then one macrotask.
//
// usage: node sdk_client.mjs SDK_DIR --protocol 1|2 --session SID [--cwd DIR] [--resumes N]
//        -- AGENT [ARGS...]

import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const sep = argv.indexOf("--");
  if (sep < 1) throw new Error("usage: sdk_client.mjs SDK_DIR [options] -- AGENT...");
  const [sdk, ...rest] = argv.slice(0, sep);
  const opts = { sdk, protocol: 2, session: null, cwd: "/home/user/project", resumes: 1 };
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i].replace(/^--/, "");
    opts[key] = ["protocol", "resumes"].includes(key) ? Number(rest[i + 1]) : rest[i + 1];
  }
  return { opts, agent: argv.slice(sep + 1) };
}

const macrotask = () => new Promise((resolve) => setImmediate(resolve));

async function main() {
  const { opts, agent } = parseArgs(process.argv.slice(2));
  const entry = opts.protocol >= 2 ? "dist/v2/stable/acp.js" : "dist/v1/stable/acp.js";
  const acp = await import(pathToFileURL(join(opts.sdk, entry)).href);
  const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

  const delivered = [];
  const asked = [];
  const app = acp
    .client({ name: "acp-trace-sdk-client" })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      const update = ctx.params.update ?? {};
      delivered.push({
        sessionId: ctx.params.sessionId,
        sessionUpdate: update.sessionUpdate,
        messageId: update.messageId ?? null,
      });
    })
    .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
      asked.push(ctx.params.sessionId);
      const options = ctx.params.options ?? [];
      const allow = options.find((o) => String(o.kind).startsWith("allow")) ?? options[0];
      return { outcome: { outcome: "selected", optionId: allow?.optionId ?? "allow" } };
    });
  const connection = app.connect(stream);
  const peer = connection.agent;

  async function call(method, params) {
    const exchange = { method, sessionId: params.sessionId ?? null };
    try {
      exchange.result = await peer.request(method, params);
    } catch (error) {
      exchange.error = { code: error.code ?? null, message: String(error.message) };
    }
    exchange.at_response = delivered.length;
    return exchange;
  }

  const out = { protocol: opts.protocol, exchanges: [] };
  const info = { name: "acp-trace-sdk-client", version: "1.0" };
  const init =
    opts.protocol >= 2
      ? { protocolVersion: 2, info, capabilities: {} }
      : { protocolVersion: 1, clientInfo: info, clientCapabilities: { fs: {}, terminal: false } };
  out.exchanges.push(await call(acp.methods.agent.initialize, init));
  const resume =
    opts.protocol >= 2
      ? [acp.methods.agent.session.resume, { replayFrom: { type: "start" } }]
      : [acp.methods.agent.session.load, { mcpServers: [] }];
  for (let n = 0; n < opts.resumes; n++) {
    const params = { sessionId: opts.session, cwd: opts.cwd, ...resume[1] };
    out.exchanges.push(await call(resume[0], params));
  }
  const barrier = await call(acp.methods.agent.session.list, { cwd: opts.cwd });
  await macrotask();
  out.barrier = barrier.error ?? barrier.result;
  out.delivered = delivered;
  out.permission_requests = asked;

  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGTERM"), 10_000);
  out.agent_exit = await exited;
  clearTimeout(timer);
  connection.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(`sdk_client: ${error.stack ?? error}\n`);
  process.exit(1);
});
