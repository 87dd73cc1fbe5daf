// dynalite with transactions (dynalite-tx.ts) as a process of its own, for the suites that run
// against a DynamoDB outside the test process (test/external/run.ts).
// `node --import tsx local/dynalite-server.ts [--port N]`: listens on 127.0.0.1 (port 0, the
// default, lets the OS pick) and prints "Dynalite listening at: http://127.0.0.1:<port>".
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createDynalite } from "./dynalite-tx.js";

const HOST = "127.0.0.1";
const { values } = parseArgs({ options: { port: { type: "string", default: "0" } } });
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`dynalite-server: --port ${values.port} is not a port number\n`);
  process.exit(2);
}
const server = createDynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(port, HOST, () => {
  const { port: actual } = server.address() as AddressInfo;
  process.stdout.write(`Dynalite listening at: http://${HOST}:${actual}\n`);
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
