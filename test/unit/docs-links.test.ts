/**
 * Every relative link of the docs and the README leads somewhere: the file exists, and an anchor
 * (`file.md#a-heading`) names a heading of that file, slugged as GitHub slugs it (lower case, punctuation
 * dropped, spaces as hyphens, a repeated heading numbered). Links inside code blocks are not links.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(".");

function markdownFiles(): string[] {
  const docs = (fs.readdirSync(path.join(ROOT, "docs"), { recursive: true }) as string[])
    .filter((f) => f.endsWith(".md"))
    .map((f) => path.join("docs", f));
  return ["README.md", ...docs].sort();
}

/** The text outside fenced code blocks and inline code. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "");
}

function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(file: string): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8").replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1] ?? "");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const match of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(match[1] ?? "");
  return anchors;
}

function brokenLinks(file: string): string[] {
  const text = prose(fs.readFileSync(path.join(ROOT, file), "utf8"));
  const broken: string[] = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const link = match[1] ?? "";
    if (/^[a-z]+:/i.test(link)) continue;
    const [target = "", anchor] = link.split("#");
    const resolved = target === "" ? file : path.join(path.dirname(file), target);
    if (!fs.existsSync(path.join(ROOT, resolved))) {
      broken.push(`${file}: ${link}: no file ${resolved}`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(resolved).has(anchor))
      broken.push(`${file}: ${link}: no heading #${anchor} in ${resolved}`);
  }
  return broken;
}

describe("the docs' links", () => {
  it("each relative link names a file that exists, and a heading of it when it has an anchor", () => {
    expect(markdownFiles().flatMap(brokenLinks)).toEqual([]);
  });
});
