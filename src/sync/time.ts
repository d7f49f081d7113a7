/** Server timestamps are normalised to `toISOString()` form so that they compare as text. */
export function serverTime(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new TypeError(`not a timestamp: ${JSON.stringify(value)}`);
  return new Date(ms).toISOString();
}
