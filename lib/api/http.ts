// The HTTP entry of the API, for the local server (and anything else that is not API Gateway).
export type { HttpRequest, HttpResponse } from "./request.js";
export { apiApp, handleHttp } from "./router.js";
