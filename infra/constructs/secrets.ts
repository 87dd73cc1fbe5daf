// The API's secrets. Its token table (token → {user_id, project_id, roles}) lives in Secrets
// Manager, read at run time: never in the template or the function's environment. It starts
// empty (every call 401, never the local demo tokens); the operator puts the table with
// put-secret-value. Identity: tokens are signed with a key generated into a secret (never in the
// template), and the admin's password is generated into another, which the operator's seed
// reads; or, with keystoneUrl, both are Keystone's business.
import { CfnOutput, type RemovalPolicy, SecretValue, type Stack } from "aws-cdk-lib";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { NagSuppressions } from "cdk-nag";

export interface SecretsProps {
  removalPolicy: RemovalPolicy;
  /** An existing Keystone: no token key nor admin password is created. */
  keystoneUrl?: string;
}

export class Secrets {
  readonly authTokens: secretsmanager.Secret;
  /** /identity's token signing key (generated); absent with keystoneUrl */
  readonly tokenKey?: secretsmanager.Secret;
  /** the /identity admin's password (generated), for `npm run seed -- --admin-password-from-secret` */
  readonly adminPassword?: secretsmanager.Secret;
  /** What the API function is told of them (and of Keystone). */
  readonly apiEnvironment: Record<string, string>;

  constructor(stack: Stack, props: SecretsProps) {
    const { removalPolicy } = props;
    this.authTokens = new secretsmanager.Secret(stack, "AuthTokens", {
      description: "novaless API token table: JSON token -> {user_id, project_id, roles}",
      secretStringValue: SecretValue.unsafePlainText("{}"),
      removalPolicy,
    });
    this.apiEnvironment = { NOVALESS_AUTH_TOKENS_SECRET: this.authTokens.secretArn };
    if (props.keystoneUrl) this.apiEnvironment.NOVALESS_KEYSTONE_URL = props.keystoneUrl;
    else {
      this.tokenKey = new secretsmanager.Secret(stack, "TokenKey", {
        description: "novaless /identity token signing key (HMAC-SHA256)",
        generateSecretString: { passwordLength: 64, excludePunctuation: true },
        removalPolicy,
      });
      this.adminPassword = new secretsmanager.Secret(stack, "AdminPassword", {
        description: "novaless /identity admin password: npm run seed -- --admin-password-from-secret <arn>",
        generateSecretString: { passwordLength: 32, excludePunctuation: true },
        removalPolicy,
      });
      this.apiEnvironment.NOVALESS_TOKEN_KEY_SECRET = this.tokenKey.secretArn;
    }
    new CfnOutput(stack, "AuthTokensSecretArn", {
      value: this.authTokens.secretArn,
      description:
        "Put the API's token table here: aws secretsmanager put-secret-value --secret-id <arn> --secret-string file://tokens.json",
    });
    if (this.adminPassword)
      new CfnOutput(stack, "AdminPasswordSecretArn", {
        value: this.adminPassword.secretArn,
        description:
          "The /identity admin's password: NOVALESS_IDENTITY_TABLE=<IdentityTableName> npm run seed -- --admin-password-from-secret <arn>",
      });

    NagSuppressions.addResourceSuppressions(this.authTokens, [
      {
        id: "AwsSolutions-SMG4",
        reason:
          "The secret holds the API's token table (Keystone's role, reduced), data the operator edits with put-secret-value; there is no credential behind it for a rotation Lambda to rotate",
      },
    ]);
    for (const secret of [this.tokenKey, this.adminPassword])
      if (secret)
        NagSuppressions.addResourceSuppressions(secret, [
          {
            id: "AwsSolutions-SMG4",
            reason:
              "Generated once: rotating the token key ends every token in flight, and the admin's password is re-seeded by the operator (npm run seed -- --admin-password-from-secret); neither has a rotation Lambda",
          },
        ]);
  }
}
