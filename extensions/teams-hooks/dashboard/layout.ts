/**
 * The frame every dashboard page shares, and the small pieces several pages print: a time, an
 * outcome, a duration. Pages work without JavaScript: `/assets/app.js` only turns UTC times into the
 * viewer's zone and adds live updates. No inline script or style anywhere (the Content-Security-Policy
 * forbids both): the look is `/assets/app.css`, light or dark as the viewer's system prefers.
 */
import { NON_BLOCKING_WORD } from "../logs/format.js";
import { formatDuration } from "../text/messages.js";
import { type Html, html } from "./html.js";

type Section = "overview" | "runs";

interface PageInput {
  title: string;
  section: Section | null;
  body: Html;
  /** `data-live` on <main>: what app.js subscribes to (`runs`, `overview`), with the filter it keeps. */
  live?: { kind: "runs" | "overview"; query: string };
}

export function page(input: PageInput): string {
  const link = (section: Section, href: string, label: string): Html =>
    html`<a href="${href}"${input.section === section ? html` aria-current="page"` : ""}>${label}</a>`;
  const live = input.live ? html` data-live="${input.live.kind}" data-live-query="${input.live.query}"` : "";
  return `<!doctype html>\n${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${input.title} · pi-teams-hooks</title>
<link rel="stylesheet" href="/assets/app.css">
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
<script src="/assets/app.js" defer></script>
</head>
<body>
<header class="top">
<a class="brand" href="/">pi-teams-hooks</a>
<nav aria-label="Dashboard">${link("overview", "/", "Overview")}${link("runs", "/runs", "Runs")}</nav>
<p class="live-status" id="live-status" role="status" aria-live="polite"></p>
</header>
<main id="main"${live}>
${input.body}
</main>
<footer class="foot"><p>Read-only view of the teams' hook logs. Times are UTC until the page's script shows them \
in your time zone.</p></footer>
</body>
</html>
`.text
  }`;
}

/** A time as UTC text that app.js rewrites in the viewer's zone; the ISO form stays in `datetime`. */
export function timeOf(iso: string): Html {
  const { utc, text } = timeParts(iso);
  return utc === null ? html`<span>${text}</span>` : html`<time datetime="${utc}">${text}</time>`;
}

/** `timeOf`'s parts: the time in UTC (ISO 8601; null when `iso` is not a time) and its text. */
export function timeParts(iso: string): { utc: string | null; text: string } {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return { utc: null, text: iso };
  const utc = new Date(ms).toISOString();
  return { utc, text: `${utc.slice(0, 10)} ${utc.slice(11, 19)} UTC` };
}

/** The outcome words of the logs table, and the class that colours them: a pass that let an error through is a note. */
export function outcomeBadge(word: string): Html {
  return html`<span class="badge badge-${outcomeKind(word)}">${word}</span>`;
}

/**
 * How an outcome word is coloured: `badge-ok`, `badge-note` (a pass that let an error through is one) or `badge-bad`.
 */
export function outcomeKind(word: string): "ok" | "note" | "bad" {
  if (/^(passed|allowed)$/.test(word)) return "ok";
  return /^(deferred|skipped|held)$/.test(word) || word.startsWith("shadow") || word === NON_BLOCKING_WORD
    ? "note"
    : "bad";
}

export function durationText(ms: number | null): string {
  return ms === null ? "–" : formatDuration(ms);
}

/** A pass rate as a whole percentage (`60%`); "–" when nothing ended yet. */
export function rateText(passed: number, runs: number): string {
  return runs === 0 ? "–" : `${Math.round((passed / runs) * 100)}%`;
}
