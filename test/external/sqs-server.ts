// fauxqs as a process of its own, on 127.0.0.1 and a port the OS picks (printed as
// `listening <url>`), for the external-endpoint run. fauxqs's own CLI listens on 0.0.0.0 and names
// queues `http://sqs.<region>.localhost:<port>/…`, a host this machine does not resolve; with an
// empty store host fauxqs builds queue URLs from the request's Host header, the endpoint itself.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { buildApp } from "fauxqs";

/** A module of fauxqs that its package `exports` does not list. */
async function internal<T>(relative: string): Promise<T> {
  const dirs = createRequire(import.meta.url).resolve.paths("fauxqs") ?? [];
  const root = dirs.map((d) => join(d, "fauxqs")).find((d) => existsSync(join(d, "package.json")));
  if (!root) throw new Error("fauxqs is not installed");
  return (await import(pathToFileURL(join(root, "dist", relative)).href)) as T;
}

const { SqsStore } = await internal<{ SqsStore: new () => { host: string } }>("sqs/sqsStore.js");
const { SnsStore } = await internal<{ SnsStore: new () => object }>("sns/snsStore.js");
const { S3Store } = await internal<{ S3Store: new () => object }>("s3/s3Store.js");
const sqsStore = new SqsStore();
sqsStore.host = "";
const app = buildApp({
  logger: false,
  stores: { sqsStore, snsStore: new SnsStore(), s3Store: new S3Store() } as NonNullable<
    Parameters<typeof buildApp>[0]
  >["stores"],
});
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
const { port } = app.server.address() as AddressInfo;
process.stdout.write(`listening http://127.0.0.1:${port}\n`);
const stop = () => void app.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
