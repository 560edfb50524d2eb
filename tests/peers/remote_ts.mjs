// A remote ACP agent and client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0:
// experimental/server, experimental/node, experimental/http-client, experimental/ws-client; `ws`
// 8.23.0 for the WebSocket server and the Node client), for the remote recorder's peer tests.
//
// usage: node remote_ts.mjs server NODE_MODULES
//          listens on 127.0.0.1 (a free port, printed as `{"port": N}`), /acp for both
//          transports, until SIGTERM. The agent (protocol v2) keeps each session's turns; a
//          `session/resume` with replayFrom start replays them (user_message and
//          agent_message_chunk updates with messageId), sends replay_complete, a state_update
//          snapshot, then answers. A prompt whose text is `cut` makes the next replay stop after
//          its first update by closing the connection (a stream cut mid-replay).
//        node remote_ts.mjs client NODE_MODULES URL http|ws [SESSION]
//          initialize, session/new (or, with SESSION, that session), one prompt turn, then a
//          replaying session/resume; prints one JSON object of what it got.

import http from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [mode, modules, ...rest] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(modules, path)).href);
const SDK = "@agentclientprotocol/sdk/dist";

async function server() {
  const acp = await load(`${SDK}/v2/stable/acp.js`);
  const { AcpServer } = await load(`${SDK}/transports/server.js`);
  const node = await load(`${SDK}/transports/node-adapter.js`);
  const { WebSocketServer } = (await load("ws/index.js")).default;
  const sessions = new Map(); // sid -> {turns: [text], cut: bool}
  let created = 0;
  const update = (ctx, sessionId, u) =>
    ctx.client.notify(acp.methods.client.session.update, { sessionId, update: u });
  const app = () =>
    acp
      .agent({ name: "remote-ts-agent" })
      .onRequest(acp.methods.agent.initialize, () => ({
        protocolVersion: 2,
        info: { name: "remote-ts-agent", version: "1.0.0" },
        capabilities: { session: {} },
      }))
      .onRequest(acp.methods.agent.session.new, () => {
        const sessionId = `sess-ts-${++created}`;
        sessions.set(sessionId, { turns: [], cut: false });
        return { sessionId };
      })
      .onRequest(acp.methods.agent.session.prompt, async (ctx) => {
        const { sessionId, prompt } = ctx.params;
        const s = sessions.get(sessionId);
        const text = prompt.map((b) => b.text ?? "").join("");
        const n = s.turns.length;
        s.turns.push(text);
        if (text === "cut") s.cut = true;
        setTimeout(async () => {
          await update(ctx, sessionId, { sessionUpdate: "state_update", state: "running" });
          await update(ctx, sessionId, {
            sessionUpdate: "agent_message_chunk",
            messageId: `${sessionId}-a${n}`,
            content: { type: "text", text: `echo: ${text}` },
          });
          await update(ctx, sessionId, { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
        }, 5);
        return { messageId: `${sessionId}-u${n}` };
      })
      .onRequest(acp.methods.agent.session.resume, async (ctx) => {
        const { sessionId } = ctx.params;
        const s = sessions.get(sessionId);
        if (!s) throw acp.RequestError.resourceNotFound(sessionId);
        if (ctx.params.replayFrom) {
          for (const [n, text] of s.turns.entries()) {
            await update(ctx, sessionId, {
              sessionUpdate: "user_message",
              messageId: `${sessionId}-u${n}`,
              content: [{ type: "text", text }],
            });
            if (s.cut) {
              setTimeout(() => process.emit("acp-cut"), 50);
              return new Promise(() => {}); // never answers: the connection is cut
            }
            await update(ctx, sessionId, {
              sessionUpdate: "agent_message",
              messageId: `${sessionId}-a${n}`,
              content: [{ type: "text", text: `echo: ${text}` }],
            });
          }
          await update(ctx, sessionId, { sessionUpdate: "replay_complete" });
        }
        await update(ctx, sessionId, { sessionUpdate: "state_update", state: "idle" });
        return {};
      });
  const acpServer = new AcpServer({ createAgent: app });
  const sockets = new Set();
  const web = http.createServer(node.createNodeHttpHandler(acpServer));
  web.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  process.on("acp-cut", () => sockets.forEach((socket) => socket.destroy()));
  const wss = new WebSocketServer({ noServer: true });
  web.on("upgrade", node.createNodeWebSocketUpgradeHandler(acpServer, wss));
  web.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: web.address().port }) + "\n"));
  process.on("SIGTERM", async () => {
    await acpServer.close();
    process.exit(0);
  });
}

async function client() {
  const [url, transport, existing] = rest;
  const acp = await load(`${SDK}/v2/stable/acp.js`);
  const stream =
    transport === "ws"
      ? (await load(`${SDK}/transports/ws-stream.js`)).createWebSocketStream(url, {
          WebSocket: (await load("ws/index.js")).default,
        })
      : (await load(`${SDK}/transports/http-stream.js`)).createHttpStream(url);
  const updates = [];
  let idle;
  const idleSeen = new Promise((resolve) => (idle = resolve));
  const connection = acp
    .client({ name: "remote-ts-client" })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      const u = ctx.params.update;
      updates.push(u.sessionUpdate);
      if (u.sessionUpdate === "state_update" && u.stopReason) idle();
    })
    .connect(stream);
  const agent = connection.agent;
  const out = { transport, exchanges: [] };
  const call = async (method, params) => {
    const ex = { method };
    try {
      ex.result = await agent.request(method, params);
    } catch (error) {
      ex.error = { code: error.code ?? null, message: String(error.message) };
    }
    out.exchanges.push(ex);
    return ex.result;
  };
  const info = { name: "remote-ts-client", version: "1.0.0" };
  await call(acp.methods.agent.initialize, { protocolVersion: 2, info, capabilities: {} });
  const cwd = "/home/user/project";
  let sessionId = existing;
  if (!sessionId) sessionId = (await call(acp.methods.agent.session.new, { cwd })).sessionId;
  else await call(acp.methods.agent.session.resume, { sessionId, cwd });
  out.sessionId = sessionId;
  const text = process.env.REMOTE_PROMPT ?? "hello";
  await call(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  await Promise.race([idleSeen, new Promise((r) => setTimeout(r, 20000))]);
  const timeout = new Promise((r) => setTimeout(() => r("timeout"), 5000));
  await Promise.race([call(acp.methods.agent.session.resume, { sessionId, cwd, replayFrom: { type: "start" } }), timeout]);
  out.updates = updates;
  connection.close();
  process.stdout.write(JSON.stringify(out) + "\n");
  setTimeout(() => process.exit(0), 200);
}

(mode === "server" ? server() : client()).catch((error) => {
  process.stderr.write(`remote_ts: ${error.stack ?? error}\n`);
  process.exit(1);
});
