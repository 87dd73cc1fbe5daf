// The OpenStack Compute API v2.1: the entry points the Lambda handler and the local runtime use,
// and the pure pieces worth reusing.
export { createApp } from "./app.js";
export type { AuthContext } from "./auth.js";
export { authenticate } from "./auth.js";
export type { ApiDeps } from "./deps.js";
export { defaultDeps } from "./deps.js";
export { ApiError, type ErrorKind, errorBody } from "./errors.js";
export type { HttpRequest, HttpResponse } from "./request.js";
export { apiApp, handleHttp } from "./router.js";
export { ROUTES } from "./routes/index.js";
export { apiSettings, authTokens, DEFAULT_AUTH_TOKENS, type Principal, parseAuthTokens } from "./settings.js";
