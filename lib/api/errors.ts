// Refusals: `Refusal`, which every front (lib/api/front.ts) answers in its service's error shape,
// and Compute's `ApiError`, Nova's `{"<kind>": {"code", "message"}}`. A failed authentication is
// Keystone's own `{"error": {"code", "title", "message"}}`, whatever the service, as
// keystonemiddleware answers it before the service ever sees the request.

/** A refusal, answered by the front it reaches in its service's error shape. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** the service's name for it: Nova's fault kind, Neutron's exception type */
    readonly type = "",
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "Refusal";
  }
}

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

/** A compute answer other than success, thrown anywhere below the front and shaped by it. */
export class ApiError extends Refusal {
  readonly kind: ErrorKind;
  /** `status` for a code Nova has no fault name of its own for (406 is a computeFault). */
  constructor(kind: ErrorKind, message: string, headers: Record<string, string> = {}, status?: number) {
    super(status ?? ERROR_STATUS[kind], message, kind, headers);
    this.name = "ApiError";
    this.kind = kind;
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

/** The 401 keystonemiddleware answers in front of every service, in Keystone's own shape. */
export const UNAUTHORIZED_BODY = {
  error: {
    code: 401,
    title: "Unauthorized",
    message: "The request you have made requires authentication.",
  },
} as const;
