// The price table of the cost benchmark: us-east-1, on-demand, list prices without free tier.
// `asOf`: when the price took effect, or the date of the copy of its page it was checked against
// (this machine has no web access: stored copies, 2026-11-23). Re-check before quoting.

export interface Price {
  usd: number;
  per: string;
  asOf: string;
  source: string;
}

export const PRICES = {
  dynamodbWriteUnit: {
    usd: 0.625 / 1e6,
    per: "write request unit (on-demand, Standard table class)",
    asOf: "2024-11-01 (on-demand throughput prices halved that day; unchanged since)",
    source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
  },
  dynamodbReadUnit: {
    usd: 0.125 / 1e6,
    per: "read request unit (on-demand, Standard table class)",
    asOf: "2024-11-01 (on-demand throughput prices halved that day; unchanged since)",
    source: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
  },
  sqsRequest: {
    usd: 0.4 / 1e6,
    per: "SQS Standard request (each 64 KB chunk of a payload is one)",
    asOf: "2026-03 (as restated by cloudburn.io/blog/amazon-sqs-pricing, March 2026)",
    source: "https://aws.amazon.com/sqs/pricing/",
  },
  lambdaRequest: {
    usd: 0.2 / 1e6,
    per: "Lambda invocation",
    asOf: "2024 (unchanged since 2020; restated by cloudchipr.com/blog/aws-lambda-pricing)",
    source: "https://aws.amazon.com/lambda/pricing/",
  },
  lambdaGbSecondArm: {
    usd: 0.0000133334,
    per: "Lambda GB-second, Arm (the stack's architecture), first 7.5 billion GB-s a month",
    asOf: "2024 (since Arm's launch 2021-09; restated by cloudchipr.com/blog/aws-lambda-pricing)",
    source: "https://aws.amazon.com/lambda/pricing/",
  },
  expressRequest: {
    usd: 1.0 / 1e6,
    per: "Step Functions Express execution (request)",
    asOf: "2026-03-14 (as restated by wring.co/blog/aws-step-functions-pricing-guide)",
    source: "https://aws.amazon.com/step-functions/pricing/",
  },
  expressGbSecond: {
    usd: 0.00001667,
    per: "Step Functions Express GB-second (first 1,000 GB-hours; 64 MB chunks, 100 ms steps)",
    asOf: "2026-03-14 (as restated by wring.co/blog/aws-step-functions-pricing-guide)",
    source: "https://aws.amazon.com/step-functions/pricing/",
  },
  httpApiRequest: {
    usd: 1.0 / 1e6,
    per: "API Gateway HTTP API request (first 300 million a month)",
    asOf: "2024 (unchanged since HTTP APIs' launch 2020-03)",
    source: "https://aws.amazon.com/api-gateway/pricing/",
  },
  logsIngestedByte: {
    usd: 0.5 / 2 ** 30,
    per: "CloudWatch Logs byte ingested (Standard class; Lambda logs' first tier since 2025-05)",
    asOf: "2025-05",
    source: "https://aws.amazon.com/cloudwatch/pricing/",
  },
  vendedLogsIngestedByte: {
    usd: 0.5 / 2 ** 30,
    per: "CloudWatch vended logs byte ingested (Step Functions' execution logs; first 10 TB a month)",
    asOf: "2026-11-23 (the stored copy of the pricing page, Vended Logs; the Step Functions guide bills its logs at that rate)",
    source: "https://aws.amazon.com/cloudwatch/pricing/",
  },
  xrayTraceRecorded: {
    usd: 5.0 / 1e6,
    per: "X-Ray trace recorded (first 100,000 a month free, not counted)",
    asOf: "2026-11-23 (the stored copy of the pricing page; unchanged since 2017)",
    source: "https://aws.amazon.com/xray/pricing/",
  },
  cloudwatchAlarm: {
    usd: 0.1,
    per: "CloudWatch standard-resolution alarm a month (a metric alarm on one metric; first 10 free, not counted)",
    asOf: "2026-11-23 (the stored copy of the pricing page; unchanged since 2019)",
    source: "https://aws.amazon.com/cloudwatch/pricing/",
  },
  cloudwatchDashboard: {
    usd: 3.0,
    per: "CloudWatch dashboard a month (first 3 an account free, not counted)",
    asOf: "2026-11-23 (the stored copy of the pricing page)",
    source: "https://aws.amazon.com/cloudwatch/pricing/",
  },
  secretsManagerSecret: {
    usd: 0.4,
    per: "Secrets Manager secret a month (its API calls, $0.05 per 10,000, not counted)",
    asOf: "2026-11-23 (the stored copy of the pricing page; unchanged since 2018)",
    source: "https://aws.amazon.com/secrets-manager/pricing/",
  },
} satisfies Record<string, Price>;
