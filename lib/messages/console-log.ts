// os-getConsoleOutput's `length`, as Nova's compute manager applies it (_tail_log): the last
// `length` pieces of the log split at newlines. A log ending in a newline has an empty last
// piece, which counts: tempest checks this count, and clients see the same text as from Nova.

/** The log's last `length` newline-separated pieces; the whole log when `length` is undefined. */
export function tailLog(log: string, length: number | undefined): string {
  if (length === undefined) return log;
  if (length <= 0) return "";
  return log.split("\n").slice(-length).join("\n");
}
