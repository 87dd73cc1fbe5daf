// The local runtime refuses to start on an event source mapping AWS would refuse, rather than run
// it: here build-intake's timeout (raised for the test) above build-requests' visibility timeout,
// which Lambda refuses when the mapping is created.
import { expect, it } from "vitest";
import { BUILD_REQUESTS_QUEUE } from "../../lib/resources.js";
import { startTestRuntime } from "./harness.js";

it("refuses build-intake's mapping when the function's timeout is above the queue's visibility timeout", async () => {
  const timeout = BUILD_REQUESTS_QUEUE.visibilityTimeout + 1;
  await expect(startTestRuntime({ hosts: 1, lambdaTimeouts: { "build-intake": timeout } })).rejects.toThrow(
    `build-intake's event source mapping is refused: Queue visibility timeout: ${BUILD_REQUESTS_QUEUE.visibilityTimeout} seconds is less than Function timeout: ${timeout} seconds`,
  );
});
