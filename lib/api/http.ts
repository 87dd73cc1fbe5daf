// The HTTP entry of the API, for the local node:http server (and anything else that is not
// API Gateway): `handleHttp(request) → response`, never throwing.

export type { HttpRequest, HttpResponse } from "./request.js";
export { handleHttp } from "./router.js";
