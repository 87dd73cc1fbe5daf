import { defineConfig, mergeConfig } from "vitest/config";
import base from "../vitest.config.ts";
export default mergeConfig(base, defineConfig({ test: { env: { NOVALESS_LOG_LEVEL: "warn" } } }));
