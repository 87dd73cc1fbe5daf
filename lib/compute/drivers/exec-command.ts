// What an exec image names: the command a server runs, as a shell would split it, without a shell.

/** The image property naming the command a server runs. */
export const EXEC_COMMAND_PROPERTY = "novaless:exec_command";

/**
 * A command line split as a shell would split words, without a shell: single and double quotes,
 * backslash escapes; or a JSON array of strings.
 */
export function parseCommandLine(text: string): string[] {
  const t = text.trim();
  if (t.startsWith("[")) {
    const argv = JSON.parse(t) as unknown;
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string") || argv.length === 0)
      throw new Error(`${EXEC_COMMAND_PROPERTY} as JSON must be a non-empty array of strings`);
    return argv;
  }
  const out: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < t.length; i++) {
    const c = t[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === "\\" && quote === '"' && i + 1 < t.length) word = (word ?? "") + t[++i];
      else word = (word ?? "") + c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === "\\" && i + 1 < t.length) word = (word ?? "") + t[++i];
    else if (/\s/.test(c)) {
      if (word !== undefined) out.push(word);
      word = undefined;
    } else word = (word ?? "") + c;
  }
  if (quote) throw new Error(`unterminated ${quote} in ${EXEC_COMMAND_PROPERTY}: ${text}`);
  if (word !== undefined) out.push(word);
  if (out.length === 0) throw new Error(`${EXEC_COMMAND_PROPERTY} is empty`);
  return out;
}
