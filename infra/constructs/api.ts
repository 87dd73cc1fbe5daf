// The HTTP API in front of the API function: its $default stage's access logs and throttling.
import { CfnOutput, RemovalPolicy, type Stack } from "aws-cdk-lib";
import * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { NagSuppressions } from "cdk-nag";

/** The $default stage's access log line, one per request (the cost bench bills its bytes). */
export const ACCESS_LOG_FORMAT = {
  requestId: "$context.requestId",
  sourceIp: "$context.identity.sourceIp",
  requestTime: "$context.requestTime",
  httpMethod: "$context.httpMethod",
  path: "$context.path",
  status: "$context.status",
  responseLength: "$context.responseLength",
  latencyMs: "$context.responseLatency",
  integrationLatencyMs: "$context.integrationLatency",
  integrationError: "$context.integrationErrorMessage",
};

export interface ApiProps {
  handler: IFunction;
  /** Steady requests per second. */
  throttleRateLimit: number;
  throttleBurstLimit: number;
  logRetention: logs.RetentionDays;
}

export class Api {
  readonly httpApi: apigwv2.HttpApi;

  constructor(stack: Stack, props: ApiProps) {
    this.httpApi = new apigwv2.HttpApi(stack, "HttpApi", {
      description: "novaless: the OpenStack Compute API subset",
      defaultIntegration: new HttpLambdaIntegration("ApiIntegration", props.handler, {
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      }),
    });
    // Access logs and throttling on the $default stage the API already has (a new stage resource
    // would collide with it on update: two stages named $default).
    const accessLogs = new logs.LogGroup(stack, "HttpApiAccessLogs", {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const defaultStage = this.httpApi.defaultStage!.node.defaultChild as apigwv2.CfnStage;
    defaultStage.accessLogSettings = {
      destinationArn: accessLogs.logGroupArn,
      // Never a header: X-Auth-Token is a credential.
      format: JSON.stringify(ACCESS_LOG_FORMAT),
    };
    defaultStage.defaultRouteSettings = {
      throttlingRateLimit: props.throttleRateLimit,
      throttlingBurstLimit: props.throttleBurstLimit,
    };
    new CfnOutput(stack, "ApiUrl", { value: this.httpApi.url! });

    NagSuppressions.addResourceSuppressions(
      this.httpApi,
      [
        {
          id: "AwsSolutions-APIG4",
          reason:
            "Authentication is the API function's, as in Nova: every /v2.1 call carries an OpenStack X-Auth-Token checked against the token table (401 otherwise); the version documents are public, as in Nova",
        },
      ],
      true,
    );
  }
}
