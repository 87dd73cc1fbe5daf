import { edgeHandler, fetchCall } from "../../lib/api/image/edge.js";

/**
 * Lambda@Edge on the distribution's upload behaviour (origin-request and origin-response):
 * Glance's image upload, its body sent to S3 (lib/api/image/edge.ts). No environment: Lambda@Edge
 * has none; the API's address comes with each request's origin.
 */
export const handler = edgeHandler(fetchCall);
