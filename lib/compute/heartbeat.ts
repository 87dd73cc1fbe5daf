// When a host's heartbeat is sent. Liveness is when compute-events last heard from the host (the
// Services item's last_heartbeat, written as each report arrives); a report that says nothing new
// buys only that freshness, and each costs an SQS request and a write. So the agent checks every
// report_interval, as Nova's does, but sends a report with nothing new only when it must.

/**
 * Whether the heartbeat at this report_interval tick is sent: `beats` intervals after the last one
 * sent (or the registration). One that carries news (builds ended, dead letters) always is. One
 * with nothing new is once the last is half of service_down_time old, and before skipping it would
 * leave less than one interval to spare: so the record is never older than service_down_time less
 * one interval, and at the defaults (40 s, 120 s) an idle host reports every 80 s.
 */
export function heartbeatDue(
  beats: number,
  reportIntervalSeconds: number,
  serviceDownTimeSeconds: number,
  news: boolean,
): boolean {
  return (
    news ||
    beats * reportIntervalSeconds >= serviceDownTimeSeconds / 2 ||
    (beats + 1) * reportIntervalSeconds > serviceDownTimeSeconds - reportIntervalSeconds
  );
}

/** Seconds between an idle host's heartbeats: the first tick heartbeatDue sends with no news. */
export function idleHeartbeatSeconds(reportIntervalSeconds: number, serviceDownTimeSeconds: number): number {
  let beats = 1;
  while (!heartbeatDue(beats, reportIntervalSeconds, serviceDownTimeSeconds, false)) beats++;
  return beats * reportIntervalSeconds;
}

/** A host's heartbeat checks: counts the intervals since the last heartbeat sent. */
export class HeartbeatClock {
  /** intervals since the last heartbeat sent; registration set last_heartbeat too */
  private beats = 0;

  constructor(
    private readonly reportIntervalSeconds: number,
    private readonly serviceDownTimeSeconds: number,
  ) {
    // a missing setting would silence every idle heartbeat (NaN compares false): refuse it
    if (!(reportIntervalSeconds > 0 && serviceDownTimeSeconds > 0))
      throw new Error(
        `heartbeats need [DEFAULT] report_interval and service_down_time above 0 (got ${reportIntervalSeconds} and ${serviceDownTimeSeconds})`,
      );
  }

  /** A report_interval has passed: whether a heartbeat, carrying news or not, goes now. */
  due(news: boolean): boolean {
    this.beats++;
    return heartbeatDue(this.beats, this.reportIntervalSeconds, this.serviceDownTimeSeconds, news);
  }

  /** It went (one that failed leaves the count running: the next check sends). */
  sent(): void {
    this.beats = 0;
  }
}
