// Errors in the shapes OpenStack clients parse: Nova's `{"<kind>": {"code", "message"}}` for
// everything except a failed authentication, which Keystone's middleware answers with its own
// `{"error": {"code", "title", "message"}}` before Nova ever sees the request.

export const ERROR_STATUS = {
  badRequest: 400,
  forbidden: 403,
  itemNotFound: 404,
  badMethod: 405,
  // Nova's fault name for 409 (nova/api/openstack/wsgi.py's Fault)
  conflictingRequest: 409,
  overLimit: 413,
  computeFault: 500,
  notImplemented: 501,
} as const;

export type ErrorKind = keyof typeof ERROR_STATUS;

/** An answer other than success, thrown anywhere below the router and shaped by it. */
export class ApiError extends Error {
  readonly kind: ErrorKind;
  readonly headers: Record<string, string>;
  readonly status: number;
  /** `status` for a code Nova has no fault name of its own for (406 is a computeFault). */
  constructor(kind: ErrorKind, message: string, headers: Record<string, string> = {}, status?: number) {
    super(message);
    this.name = "ApiError";
    this.kind = kind;
    this.headers = headers;
    this.status = status ?? ERROR_STATUS[kind];
  }
  body(): Record<string, { code: number; message: string }> {
    return { [this.kind]: { code: this.status, message: this.message } };
  }
}

export function errorBody(
  kind: ErrorKind,
  message: string,
): Record<string, { code: number; message: string }> {
  return { [kind]: { code: ERROR_STATUS[kind], message } };
}

export const badRequest = (message: string): ApiError => new ApiError("badRequest", message);
export const notFound = (message: string): ApiError => new ApiError("itemNotFound", message);
export const conflict = (message: string): ApiError => new ApiError("conflictingRequest", message);
export const forbidden = (message: string): ApiError => new ApiError("forbidden", message);

/** Nova's policy failure: `Policy doesn't allow <rule> to be performed.` */
export const policyForbidden = (rule: string): ApiError =>
  new ApiError("forbidden", `Policy doesn't allow ${rule} to be performed.`);

export const instanceNotFound = (id: string): ApiError => notFound(`Instance ${id} could not be found.`);

export const RESOURCE_NOT_FOUND = "The resource could not be found.";
export const METHOD_NOT_ALLOWED = "The method specified is not allowed for this resource.";
export const REQUEST_TOO_LARGE = "Request is too large.";
export const MALFORMED_BODY = "Malformed request body";
/** Nova's message for an unexpected exception; the cause goes to the log only. */
export const UNEXPECTED_ERROR =
  "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova " +
  "API log if possible.";

export const UNAUTHORIZED_STATUS = 401;
/** Keystone's answer to a missing or unknown token. */
export const UNAUTHORIZED_BODY = {
  error: {
    code: 401,
    title: "Unauthorized",
    message: "The request you have made requires authentication.",
  },
} as const;
