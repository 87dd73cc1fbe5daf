// Pieces of DynamoDB condition expressions that several tables' writes share.

/** `attr IN (...)` over `states`, each added to `values` as `:<prefix>0`, `:<prefix>1`, ... */
export function inState(
  values: Record<string, unknown>,
  attr: string,
  states: readonly unknown[],
  prefix = attr,
): string {
  states.forEach((s, i) => {
    values[`:${prefix}${i}`] = s;
  });
  return `${attr} IN (${states.map((_, i) => `:${prefix}${i}`).join(", ")})`;
}
