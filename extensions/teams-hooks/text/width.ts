/**
 * How many terminal columns text takes: East Asian Wide and Fullwidth characters (UAX #11) and
 * emoji shown as emoji take 2, combining marks, zero-width and format characters 0, ANSI escape
 * sequences 0, everything else 1 (Ambiguous characters, `…` among them, count 1, as in terminals
 * outside CJK locales). Widths are counted per grapheme cluster (`e` + U+0301, a flag, a family
 * joined by ZWJ: one cluster each), so a mark never adds to its base. No imports: the logs table
 * uses it before anything else is loaded.
 */

/**
 * Code point ranges of East Asian Wide (W) and Fullwidth (F), merged where the gaps between them are unassigned; emoji
 * come from `Emoji_Presentation`.
 */
const WIDE: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x115f], // Hangul Jamo leading consonants
  [0x2329, 0x232a], // angle brackets
  [0x2e80, 0x303e], // CJK radicals, Kangxi radicals, ideographic description, CJK symbols and punctuation
  [0x3041, 0x3247], // Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed CJK
  [0x3250, 0x4dbf], // enclosed CJK, CJK compatibility, CJK extension A
  [0x4e00, 0xa4cf], // CJK unified ideographs, Yi
  [0xa960, 0xa97f], // Hangul Jamo extended A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small form variants
  [0xff00, 0xff60], // fullwidth ASCII variants
  [0xffe0, 0xffe6], // fullwidth signs
  [0x16fe0, 0x16fe4], // ideographic symbols
  [0x16ff0, 0x16ff1],
  [0x17000, 0x18d08], // Tangut, Khitan small script
  [0x1aff0, 0x1b2ff], // Kana extended and supplement, Nushu
  [0x1f200, 0x1f265], // enclosed ideographic supplement
  [0x20000, 0x2fffd], // CJK extensions B to F, compatibility supplement
  [0x30000, 0x3fffd], // CJK extensions G and H
];

/** CSI (colours, cursor), OSC (titles, links; ended by BEL or ST) and the two-character escapes. */
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-_]/g;
/** Printable ASCII only: one column per character, no escape to skip. */
const PLAIN = /^[\u0020-\u007e]*$/;
const EMOJI = /^\p{Emoji_Presentation}/u;
/** Text-style pictographs that U+FE0F (VARIATION SELECTOR-16) turns into emoji (`❤️`). */
const PICTOGRAPH = /^\p{Extended_Pictographic}/u;
const ZERO = /^[\p{Mn}\p{Me}\p{Cf}\u0000-\u001f\u007f-\u009f]/u;

/**
 * What can join code points into one cluster: marks (VS16 among them), format characters (ZWJ),
 * conjoining Jamo, regional indicators, skin tones, a CR before LF. Text without any is cut into
 * code points, which is the same and many times faster than a segmenter.
 */
const JOINS = /[\p{M}\p{Cf}\u1160-\u11ff\ud7b0-\ud7ff\r\u{1f1e6}-\u{1f1ff}\u{1f3fb}-\u{1f3ff}]/u;

let segmenter: Intl.Segmenter | null = null;

/** Calls `each` with every grapheme cluster of `text`, in order, until it returns false. */
function forClusters(text: string, each: (cluster: string) => boolean): void {
  if (!JOINS.test(text)) {
    for (const cp of text) if (!each(cp)) return;
    return;
  }
  segmenter ??= new Intl.Segmenter("en", { granularity: "grapheme" });
  for (const { segment } of segmenter.segment(text)) if (!each(segment)) return;
}

function isWide(cp: number): boolean {
  let lo = 0;
  let hi = WIDE.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [start, end] = WIDE[mid] ?? [0, -1];
    if (cp < start) hi = mid - 1;
    else if (cp > end) lo = mid + 1;
    else return true;
  }
  return false;
}

/** The columns one grapheme cluster takes: its first character decides, and VS16 makes a pictograph an emoji. */
function clusterWidth(cluster: string): number {
  const cp = cluster.codePointAt(0) ?? 0;
  if (cp >= 0x20 && cp < 0x7f) return 1;
  if (ZERO.test(cluster)) return 0;
  if (isWide(cp) || EMOJI.test(cluster)) return 2;
  if (cluster.includes("\ufe0f") && PICTOGRAPH.test(cluster)) return 2;
  return 1;
}

/** `text` without its ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return text.includes("\u001b") ? text.replace(ANSI, "") : text;
}

/** The terminal columns `text` takes on one line (`张伟` 4, `e\u0301` 1, `\u001b[31mok\u001b[0m` 2). */
export function displayWidth(text: string): number {
  if (PLAIN.test(text)) return text.length;
  let width = 0;
  forClusters(stripAnsi(text), (cluster) => {
    width += clusterWidth(cluster);
    return true;
  });
  return width;
}

/** `text` followed by spaces up to `width` columns (unchanged when it is as wide already). */
export function padEnd(text: string, width: number): string {
  const missing = width - displayWidth(text);
  return missing > 0 ? text + " ".repeat(missing) : text;
}

/** Spaces, then `text`, up to `width` columns (right-aligned numbers). */
export function padStart(text: string, width: number): string {
  const missing = width - displayWidth(text);
  return missing > 0 ? " ".repeat(missing) + text : text;
}

/**
 * `text` in at most `width` columns: unchanged when it fits, else cut at a cluster boundary and
 * ended with `…` (a wide character that would straddle the edge goes too). Escape sequences are
 * kept, and a cut one that had any ends with a reset so that no colour leaks past the cell.
 */
export function truncate(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= 0) return "";
  if (PLAIN.test(text)) return `${text.slice(0, width - 1)}\u2026`;
  const budget = width - 1;
  let used = 0;
  let out = "";
  let escaped = false;
  let at = 0;
  const take = (plain: string): boolean => {
    let fits = true;
    forClusters(plain, (cluster) => {
      const w = clusterWidth(cluster);
      fits = used + w <= budget;
      if (!fits) return false;
      used += w;
      out += cluster;
      return true;
    });
    return fits;
  };
  for (const match of text.matchAll(ANSI)) {
    if (!take(text.slice(at, match.index))) return end(out, escaped);
    out += match[0];
    escaped = true;
    at = match.index + match[0].length;
  }
  take(text.slice(at));
  return end(out, escaped);
}

function end(out: string, escaped: boolean): string {
  return `${out}\u2026${escaped ? "\u001b[0m" : ""}`;
}
