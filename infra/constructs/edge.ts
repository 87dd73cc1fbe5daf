// The CloudFront distribution in front of the HTTP API: the address operators and clients use
// (stack output EndpointUrl). It exists for one thing API Gateway cannot do: Glance's image upload.
// API Gateway takes a body of at most 10 MB and Lambda 6 MB; an image is larger. The behaviour for
// /image/v2/images/*/file runs Lambda@Edge (functions/image-edge, lib/api/image/edge.ts) on the
// origin request and response: a PUT's body goes straight to the images bucket through a URL the
// API presigns, and the API begins and completes the upload. Everything else passes to the API
// unchanged and uncached. A CloudFront Function tells the API the host it was called on
// (x-forwarded-host), so its links and Keystone's catalog name the distribution.
//
// Lambda@Edge lives in us-east-1: CDK's EdgeFunction puts it in a stack of its own there when this
// stack is elsewhere, which needs this stack's region known (`cdk deploy` always knows it). An
// environment-agnostic synth (no region) has no distribution: it says so, and uploads are then
// limited to what API Gateway carries.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  Annotations,
  AssetHashType,
  CfnOutput,
  DockerImage,
  Duration,
  Fn,
  type Stack,
  Token,
} from "aws-cdk-lib";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import * as cloudfront from "aws-cdk-lib/aws-cloudfront";
import * as origins from "aws-cdk-lib/aws-cloudfront-origins";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NagSuppressions } from "cdk-nag";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The viewer-request function: the caller's host and scheme, for the API's links. */
const FORWARDED_HOST = `function handler(event) {
  var request = event.request;
  request.headers["x-forwarded-host"] = { value: request.headers.host.value };
  request.headers["x-forwarded-proto"] = { value: "https" };
  return request;
}`;

export interface EdgeProps {
  httpApi: apigwv2.HttpApi;
}

export class Edge {
  readonly distribution: cloudfront.Distribution | undefined;

  constructor(stack: Stack, props: EdgeProps) {
    if (Token.isUnresolved(stack.region)) {
      Annotations.of(stack).addWarningV2(
        "novaless:imageEdge",
        "This stack has no region, so no CloudFront distribution (Lambda@Edge needs one): image uploads are limited to API Gateway's 10 MB. Deploy with a region (cdk deploy does).",
      );
      this.distribution = undefined;
      return;
    }
    const uploads = new cloudfront.experimental.EdgeFunction(stack, "ImageUploadEdge", {
      description:
        "novaless: Glance's image upload, its body sent to the images bucket (origin request and response)",
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: "index.handler",
      memorySize: 128,
      // Lambda@Edge's limit for origin events; the API's own steps take under API Gateway's 30 s
      timeout: Duration.seconds(30),
      // bundled by the local esbuild, as the other functions are; hashed by what it bundled (the
      // handler imports lib/api/image/edge.ts, outside the asset's folder)
      code: lambda.Code.fromAsset(`${projectRoot}functions/image-edge`, {
        assetHashType: AssetHashType.OUTPUT,
        bundling: {
          image: DockerImage.fromRegistry("unused"),
          local: {
            tryBundle(outputDir: string) {
              execFileSync(
                `${projectRoot}node_modules/.bin/esbuild`,
                [
                  "functions/image-edge/handler.ts",
                  "--bundle",
                  "--platform=node",
                  "--target=node22",
                  "--format=esm",
                  "--minify",
                  `--outfile=${outputDir}/index.mjs`,
                ],
                { cwd: projectRoot, stdio: "inherit" },
              );
              return true;
            },
          },
        },
      }),
    });
    const forwardedHost = new cloudfront.Function(stack, "ForwardedHost", {
      comment: "novaless: the caller's host for the API's links",
      code: cloudfront.FunctionCode.fromInline(FORWARDED_HOST),
      runtime: cloudfront.FunctionRuntime.JS_2_0,
    });
    // https://<id>.execute-api.<region>.amazonaws.com → its host
    const api = new origins.HttpOrigin(Fn.select(2, Fn.split("/", props.httpApi.apiEndpoint)), {
      protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
      originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
      readTimeout: Duration.seconds(30),
    });
    const passThrough = {
      origin: api,
      viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
      cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
      originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      functionAssociations: [
        { function: forwardedHost, eventType: cloudfront.FunctionEventType.VIEWER_REQUEST },
      ],
    };
    this.distribution = new cloudfront.Distribution(stack, "Endpoint", {
      comment: "novaless: the API, and Glance's uploads to the images bucket",
      defaultBehavior: passThrough,
      additionalBehaviors: {
        "/image/v2/images/*/file": {
          ...passThrough,
          edgeLambdas: [
            {
              functionVersion: uploads.currentVersion,
              eventType: cloudfront.LambdaEdgeEventType.ORIGIN_REQUEST,
            },
            {
              functionVersion: uploads.currentVersion,
              eventType: cloudfront.LambdaEdgeEventType.ORIGIN_RESPONSE,
            },
          ],
        },
      },
      priceClass: cloudfront.PriceClass.PRICE_CLASS_100,
    });
    new CfnOutput(stack, "EndpointUrl", { value: `https://${this.distribution.distributionDomainName}` });

    NagSuppressions.addResourceSuppressions(this.distribution, [
      {
        id: "AwsSolutions-CFR1",
        reason: "The API is every operator's, wherever they are: no geographic restriction",
      },
      {
        id: "AwsSolutions-CFR2",
        reason:
          "API Gateway's throttling and Keystone's tokens guard the API; a WAF is the operator's choice",
      },
      {
        id: "AwsSolutions-CFR3",
        reason:
          "Every request but an upload's body reaches API Gateway, whose access logs record it; the upload's begin and complete steps are API requests",
      },
      {
        id: "AwsSolutions-CFR4",
        reason:
          "The distribution's default *.cloudfront.net certificate allows no minimum protocol setting; an operator's own domain and certificate set TLSv1.2_2021",
      },
    ]);
    NagSuppressions.addResourceSuppressions(
      uploads.lambda,
      [
        {
          id: "AwsSolutions-L1",
          reason:
            "nodejs22.x is a supported Lambda@Edge runtime and the one this project builds and tests for (esbuild target node22); moving to the next major is a deliberate upgrade, not a lint fix",
        },
        {
          id: "AwsSolutions-IAM4",
          reason:
            "Lambda@Edge's role needs only AWSLambdaBasicExecutionRole (its logs in each edge region, whose log groups Lambda@Edge names itself): it calls no AWS service",
          appliesTo: [
            "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
          ],
        },
      ],
      true,
    );
  }
}
