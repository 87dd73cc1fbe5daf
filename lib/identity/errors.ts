// Keystone's errors as the domain raises them: a status and Keystone's own message text
// (keystone/exception.py); lib/api/identity shapes them into {"error": {code, title, message}}.

export class IdentityError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409,
    message: string,
  ) {
    super(message);
    this.name = "IdentityError";
  }
}

const CLIENT_ERROR =
  "The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.";

export const unauthorized = () =>
  new IdentityError(401, "The request you have made requires authentication.");
/** ValidationError: "Expecting to find <attribute> in <target>. …" */
export const expecting = (attribute: string, target: string) =>
  new IdentityError(400, `Expecting to find ${attribute} in ${target}. ${CLIENT_ERROR}`);
/** SchemaValidationError for one field of a body, in Keystone's words. */
export const invalidField = (field: string, value: unknown, message: string) =>
  new IdentityError(
    400,
    `Invalid input for field/attribute ${field}. Value: ${JSON.stringify(value)}. ${message}`,
  );
export const notFound = (what: string, id: string) =>
  new IdentityError(404, `Could not find ${what}: ${id}.`);
export const conflict = (type: string, details: string) =>
  new IdentityError(409, `Conflict occurred attempting to store ${type} - ${details}.`);
/** A password over Keystone's [identity] max_password_length. */
export const passwordTooLong = (max: number) =>
  new IdentityError(
    403,
    `The password length must be less than or equal to ${max}. The server could not comply with the request because the password is invalid.`,
  );
export const forbidden = (message: string) => new IdentityError(403, message);
export const forbiddenAction = (action: string) =>
  new IdentityError(403, `You are not authorized to perform the requested action: ${action}.`);
