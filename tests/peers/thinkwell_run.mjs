// Run @thinkwell/conductor (installed under peers/thinkwell-conductor) with a JSONL trace, the
// client on this process's stdin/stdout and the agent command after the trace path.
// Usage: node thinkwell_run.mjs PACKAGE_DIR TRACE_PATH AGENT [ARGS...]
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [pkgDir, tracePath, ...agent] = process.argv.slice(2);
const entry = pathToFileURL(path.join(pkgDir, "node_modules/@thinkwell/conductor/dist/index.js"));
const { Conductor, fromCommands } = await import(entry.href);

// The client connection: JSON-RPC lines on stdin, written back on stdout.
const stdioClient = {
  async connect() {
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    return {
      messages: (async function* () {
        for await (const line of lines) if (line.trim()) yield JSON.parse(line);
      })(),
      send(message) { process.stdout.write(JSON.stringify(message) + "\n"); },
      async close() { lines.close(); },
    };
  },
};

// With `trace` set, the conductor logs at level info through console.log: on this process's
// stdout that would mix log lines into the client's JSON-RPC stream, so logs go to stderr.
console.log = console.error;

const quote = (a) => `'${a.replaceAll("'", "")}'`;
const conductor = new Conductor({
  instantiator: fromCommands([agent.map(quote).join(" ")]),
  trace: { path: tracePath },
});
await conductor.connect(stdioClient);
process.exit(0);
