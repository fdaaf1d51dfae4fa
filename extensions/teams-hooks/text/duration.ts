/**
 * Durations as people write them: `30s`, `90m`, `1.5h`, `2H`, `1d12h`, `1500ms`, `1w`: one or more
 * numbers (decimals allowed), each with a unit (ms, s, m, h, d, w; any case). No imports: the logs
 * command reads its flags with it before it loads anything else.
 */

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** The forms a duration may take, for error messages. */
export const DURATION_FORMS = "a number with a unit: 30s, 90m, 1.5h, 1d12h, 1500ms (units ms, s, m, h, d, w)";

/**
 * `text` in milliseconds (rounded), or null when it is not a duration. `bare`: the unit of a number
 * written without one (`30` → 30 s with `bare: "s"`); without it, a bare number is not a duration.
 */
export function parseDuration(text: string, opts: { bare?: "ms" | "s" } = {}): number | null {
  const t = text.replace(/\s+/g, "").toLowerCase();
  if (/^\d+(\.\d+)?$/.test(t)) return opts.bare ? Math.round(Number(t) * (UNITS[opts.bare] ?? 1)) : null;
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(t)) return null;
  let total = 0;
  for (const part of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g))
    total += Number(part[1]) * (UNITS[part[2] ?? ""] ?? 0);
  return Math.round(total);
}
