// Formats every source file and brings every line within MAX_WIDTH where that can be done without a
// person: `node scripts/format-tree.mjs` (`npm run format`). The formatter (Biome, biome.json) keeps
// code within the width but leaves comments and string literals as they are, so after it this script
//   - moves a trailing `// comment` that makes its line too long onto its own line above,
//   - rewraps a comment line that is too long, with the rest of its paragraph (`//` comments and the
//     ` * ` lines of block comments; a one-line `/** … */` becomes a block), keeping indentation and prefix,
//   - splits a string or template literal that makes its line too long at a space (else after a comma)
//     into `"… " + "…"` (the same value; never inside `${…}`, a tagged template, an import specifier, a
//     property name or a type); a test's title too when the line of its call is too long,
//   - turns a regular expression literal that is too long into `new RegExp(…)` of the same source in
//     pieces (`String.raw` where a piece has a backslash), and splits such pieces further,
// and runs the formatter again, until nothing changes. Running it twice changes nothing the second time.
// What it leaves (aligned tables and code in comments, a literal with neither space nor comma, a tagged
// template such as the dashboard's html`…`, a long expression inside `${…}`) it lists at the end, for a
// person to shorten; `npm run lint` fails on those lines (scripts/line-width.mjs).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { longLines, MAX_WIDTH, ROOT, sourceFiles, width } from "./line-width.mjs";

const MAX_PASSES = 30;

function biomeFormat() {
  execFileSync(path.join(ROOT, "node_modules", ".bin", "biome"), ["format", "--write", "--no-errors-on-unmatched"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

function sourceFile(file, text) {
  const kind = /\.m?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
}

/** Every comment of the file, in order: `{ pos, end, kind }`. */
function comments(sf) {
  const found = new Map();
  const add = (ranges) => {
    for (const r of ranges ?? []) found.set(r.pos, r);
  };
  const visit = (node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    add(ts.getLeadingCommentRanges(sf.text, node.pos));
    add(ts.getTrailingCommentRanges(sf.text, node.end));
    for (const child of node.getChildren(sf)) visit(child);
  };
  visit(sf);
  return [...found.values()].sort((a, b) => a.pos - b.pos);
}

/** Ranges of string and template literals that span more than one line (their lines are text, not code). */
function multiLineLiterals(sf) {
  const ranges = [];
  const visit = (node) => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateExpression(node)) {
      const start = node.getStart(sf);
      if (sf.getLineAndCharacterOfPosition(start).line !== sf.getLineAndCharacterOfPosition(node.end).line) {
        ranges.push([start, node.end]);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return ranges;
}

const insideAny = (ranges, pos) => ranges.some(([start, end]) => pos > start && pos < end);

/** Comments that tools read where they stand: never moved or rewrapped. */
const DIRECTIVE = /^\/\/\s*(@ts-|biome-ignore|eslint-|prettier-ignore|#|\/\s*<reference)/;

/** Moves a trailing `// comment` that makes its line too long onto its own line above the code. */
function moveTrailingComments(text, sf) {
  const lineStarts = sf.getLineStarts();
  const literals = multiLineLiterals(sf);
  const edits = [];
  for (const c of comments(sf)) {
    if (c.kind !== ts.SyntaxKind.SingleLineCommentTrivia) continue;
    const { line } = sf.getLineAndCharacterOfPosition(c.pos);
    const start = lineStarts[line];
    const lineEnd = line + 1 < lineStarts.length ? lineStarts[line + 1] - 1 : text.length;
    const lineText = text.slice(start, lineEnd);
    const code = text.slice(start, c.pos);
    if (code.trim() === "" || width(lineText) <= MAX_WIDTH || c.end !== lineEnd) continue;
    const comment = text.slice(c.pos, c.end);
    if (DIRECTIVE.test(comment) || insideAny(literals, start)) continue;
    const indent = /^\s*/.exec(code)[0];
    edits.push({ start, end: lineEnd, text: `${indent}${comment}\n${code.trimEnd()}` });
  }
  return applyEdits(text, edits);
}

function applyEdits(text, edits) {
  let out = text;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** Text in a comment that wrapping would break: aligned columns, drawings, code. */
const UNWRAPPABLE = /\S {2,}\S|[│┃├└┌┐┘┤─═▶◀]|^```|^\s|^\|/;
const LIST_ITEM = /^([-*•]|\d+[.)]) +/;

/** Words of `content` laid out at most MAX_WIDTH wide: `first` before the first line, `rest` before the others. */
function wrap(words, first, rest) {
  const lines = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && width(line) + 1 + width(word) > MAX_WIDTH) {
      lines.push(line);
      line = rest + word;
    } else {
      line += (empty ? "" : " ") + word;
    }
    empty = false;
  }
  lines.push(line);
  return lines;
}

/**
 * The prose lines of comments: for each line, its prefix (`  // `, `   * `), its content, and the comment it belongs to
 * (consecutive full-line `//` comments with the same indentation are one). Other lines are absent.
 */
function proseLines(text, sf) {
  const lineStarts = sf.getLineStarts();
  const lines = text.split("\n");
  const prose = new Map();
  let lastLineComment = null;
  for (const c of comments(sf)) {
    const from = sf.getLineAndCharacterOfPosition(c.pos);
    const to = sf.getLineAndCharacterOfPosition(c.end);
    if (text.slice(lineStarts[from.line], c.pos).trim() !== "") continue; // trailing a line of code
    const indent = text.slice(lineStarts[from.line], c.pos);
    if (c.kind === ts.SyntaxKind.SingleLineCommentTrivia) {
      const m = /^\/\/( |$)(.*)$/.exec(text.slice(c.pos, c.end));
      if (!m || DIRECTIVE.test(text.slice(c.pos, c.end))) continue;
      const group =
        lastLineComment && lastLineComment.line === from.line - 1 && lastLineComment.indent === indent
          ? lastLineComment.group
          : `line:${c.pos}`;
      lastLineComment = { line: from.line, indent, group };
      prose.set(from.line, { prefix: `${indent}// `, content: m[2], group, kind: "line" });
      continue;
    }
    if (from.line === to.line) {
      // A one-line block comment standing alone on its line: `/** text */`.
      const after = lines[from.line].slice(to.character);
      const m = /^\/\*(\*?) (.*?) ?\*\/$/.exec(text.slice(c.pos, c.end));
      if (m && after.trim() === "") {
        prose.set(from.line, { prefix: indent, content: m[2], group: `block:${c.pos}`, kind: "one-line", doc: m[1] });
      }
      continue;
    }
    for (let line = from.line + 1; line < to.line; line++) {
      const m = /^(\s*)\*( |$)(.*)$/.exec(lines[line]);
      if (m) prose.set(line, { prefix: `${m[1]}* `, content: m[3], group: `block:${c.pos}`, kind: "block" });
    }
  }
  return prose;
}

/** Rewraps every comment line over MAX_WIDTH with the rest of its paragraph. */
function rewrapComments(text, sf) {
  const lines = text.split("\n");
  const prose = proseLines(text, sf);
  const replace = new Map(); // first line → { count, lines }
  const inFence = new Set();
  let fenceGroup = null;
  let fence = false;
  for (const [line, p] of [...prose.entries()].sort((a, b) => a[0] - b[0])) {
    if (p.group !== fenceGroup) [fenceGroup, fence] = [p.group, false];
    if (p.content.startsWith("```")) fence = !fence;
    if (fence) inFence.add(line);
  }
  for (let line = 0; line < lines.length; line++) {
    let p = prose.get(line);
    if (!p || width(lines[line]) <= MAX_WIDTH || inFence.has(line)) continue;
    // A list item's continuation line: the paragraph starts at the item.
    const indented = /^ +/.exec(p.content)?.[0].length ?? 0;
    if (indented > 0) {
      let k = line - 1;
      const same = (q) => q && q.group === p.group && q.prefix === p.prefix && !inFence.has(k);
      while (
        same(prose.get(k)) &&
        /^ +\S/.test(prose.get(k).content) &&
        prose.get(k).content.startsWith(" ".repeat(indented))
      )
        k--;
      const item = same(prose.get(k)) ? LIST_ITEM.exec(prose.get(k).content) : null;
      if (!item || item[0].length !== indented || replace.has(k)) continue;
      line = k;
      p = prose.get(k);
    }
    if (UNWRAPPABLE.test(p.content)) continue;
    if (p.kind === "one-line") {
      const open = p.doc ? "/**" : "/*";
      const body = wrap(p.content.split(" "), `${p.prefix} * `, `${p.prefix} * `);
      replace.set(line, { count: 1, lines: [`${p.prefix}${open}`, ...body, `${p.prefix} */`] });
      continue;
    }
    const item = LIST_ITEM.exec(p.content);
    const hang = item ? " ".repeat(item[0].length) : "";
    const words = p.content.split(" ").filter(Boolean);
    let end = line + 1;
    for (; end < lines.length; end++) {
      const next = prose.get(end);
      if (!next || next.group !== p.group || next.prefix !== p.prefix || inFence.has(end)) break;
      let content = next.content;
      if (hang) {
        if (!content.startsWith(hang) || content[hang.length] === " ") break;
        content = content.slice(hang.length);
      }
      if (content === "" || LIST_ITEM.test(content) || UNWRAPPABLE.test(content) || content.startsWith("@")) break;
      words.push(...content.split(" ").filter(Boolean));
    }
    replace.set(line, { count: end - line, lines: wrap(words, p.prefix, p.prefix + hang) });
    line = end - 1;
  }
  if (replace.size === 0) return text;
  const out = [];
  for (let line = 0; line < lines.length; line++) {
    const r = replace.get(line);
    if (r) {
      out.push(...r.lines);
      line += r.count - 1;
    } else {
      out.push(lines[line]);
    }
  }
  return out.join("\n");
}

/** Whether splitting literal `node` into a `+` expression keeps both its value and what the code means. */
function splittable(node) {
  for (let n = node.parent; n; n = n.parent) {
    if (ts.isTypeNode(n) || ts.isTemplateSpan(n) || ts.isJsxAttribute(n) || ts.isEnumMember(n)) return false;
    if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n) || ts.isModuleDeclaration(n)) return false;
    if (ts.isExternalModuleReference(n) || ts.isImportTypeNode(n) || ts.isDecorator(n)) return false;
  }
  const parent = node.parent;
  if (ts.isTaggedTemplateExpression(parent) || ts.isExpressionStatement(parent)) return false; // tags, directives
  if (ts.isAsExpression(parent) || ts.isSatisfiesExpression(parent)) return false; // `as const`: a literal only
  if (ts.isCallExpression(parent) && parent.expression.kind === ts.SyntaxKind.ImportKeyword) return false;
  if (ts.isCallExpression(parent) && ts.isIdentifier(parent.expression) && parent.expression.text === "require") {
    return false;
  }
  if ("name" in parent && parent.name === node) return false; // a property or member name
  return true;
}

/** Binary operators that bind less tightly than `+` (or are `+`): a `+` operand needs no parentheses. */
const LOOSER = new Set(
  [
    "PlusToken",
    "LessThanLessThanToken",
    "GreaterThanGreaterThanToken",
    "GreaterThanGreaterThanGreaterThanToken",
    "LessThanToken",
    "GreaterThanToken",
    "LessThanEqualsToken",
    "GreaterThanEqualsToken",
    "InstanceOfKeyword",
    "InKeyword",
    "EqualsEqualsToken",
    "ExclamationEqualsToken",
    "EqualsEqualsEqualsToken",
    "ExclamationEqualsEqualsToken",
    "AmpersandToken",
    "CaretToken",
    "BarToken",
    "AmpersandAmpersandToken",
    "BarBarToken",
    "QuestionQuestionToken",
    "CommaToken",
  ].map((k) => ts.SyntaxKind[k]),
);

/** Whether `node`, as a `+` expression, needs parentheses where it stands. */
function needsParens(node) {
  const p = node.parent;
  if (ts.isBinaryExpression(p)) {
    const op = p.operatorToken.kind;
    return !(LOOSER.has(op) || (op >= ts.SyntaxKind.FirstAssignment && op <= ts.SyntaxKind.LastAssignment));
  }
  if ((ts.isCallExpression(p) || ts.isNewExpression(p)) && p.expression !== node) return false;
  if (ts.isElementAccessExpression(p) && p.argumentExpression === node) return false;
  return !(
    ts.isConditionalExpression(p) ||
    ts.isArrayLiteralExpression(p) ||
    ts.isPropertyAssignment(p) ||
    ts.isVariableDeclaration(p) ||
    ts.isReturnStatement(p) ||
    ts.isThrowStatement(p) ||
    ts.isArrowFunction(p) ||
    ts.isParenthesizedExpression(p) ||
    ts.isBindingElement(p) ||
    ts.isParameter(p) ||
    ts.isPropertyDeclaration(p) ||
    ts.isCaseClause(p) ||
    ts.isShorthandPropertyAssignment(p)
  );
}

/** The ranges of a literal's own text (not its quotes, not `${…}`), as file offsets. */
function textRanges(node, sf) {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))
    return [[node.getStart(sf) + 1, node.end - 1]];
  const ranges = [[node.head.getStart(sf) + 1, node.head.end - 2]];
  for (const span of node.templateSpans) {
    const lit = span.literal;
    ranges.push([lit.getStart(sf) + 1, lit.end - (ts.isTemplateTail(lit) ? 1 : 2)]);
  }
  return ranges;
}

const TEST_CALLS = new Set(["it", "test", "describe", "suite", "bench"]);

/** Whether `node` is the title of a test (`it("…", () => …)`, `describe.each(…)("…", …)`). */
function isTestTitle(node) {
  const call = node.parent;
  if (!ts.isCallExpression(call) || call.arguments[0] !== node) return false;
  let callee = call.expression;
  while (ts.isPropertyAccessExpression(callee) || ts.isCallExpression(callee)) callee = callee.expression;
  return ts.isIdentifier(callee) && TEST_CALLS.has(callee.text);
}

/** A `String.raw` template without substitutions: its pieces can be split and joined like a string's. */
function isRawTemplate(node) {
  return (
    ts.isTaggedTemplateExpression(node) &&
    ts.isNoSubstitutionTemplateLiteral(node.template) &&
    ts.isPropertyAccessExpression(node.tag) &&
    ts.isIdentifier(node.tag.expression) &&
    node.tag.expression.text === "String" &&
    node.tag.name.text === "raw"
  );
}

/** A regular expression literal whose source can go in a `String.raw` template (no backtick, no `${`). */
function isSplittableRegex(node, sf) {
  if (!ts.isRegularExpressionLiteral(node)) return false;
  const text = node.getText(sf);
  return !text.includes("`") && !text.includes("${");
}

/** A piece of a regular expression's source: `String.raw` when it has a backslash, else a plain string. */
function rawPiece(source) {
  return source.includes("\\") ? `String.raw\`${source}\`` : JSON.stringify(source);
}

/** Whether a piece ending just before `p` ends in a backslash that escapes nothing. */
function afterBackslash(text, p) {
  let backslashes = 0;
  while (text[p - 1 - backslashes] === "\\") backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Splits, on each line over MAX_WIDTH, one literal that runs past the width: a string or template literal
 * into `"… " + "…"`, a `String.raw` piece into two, a regular expression `/…/f` into
 * new RegExp(String.raw`…` + String.raw`…`, "f") (the same source, so the same expression).
 */
function splitLiterals(text, sf) {
  const lineStarts = sf.getLineStarts();
  const lines = text.split("\n");
  const byLine = new Map();
  const visit = (node) => {
    const literal =
      ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
    if (literal || isRawTemplate(node) || isSplittableRegex(node, sf)) {
      const start = node.getStart(sf);
      const { line } = sf.getLineAndCharacterOfPosition(start);
      if (line === sf.getLineAndCharacterOfPosition(node.end).line && width(lines[line]) > MAX_WIDTH) {
        if (!byLine.has(line)) byLine.set(line, []);
        byLine.get(line).push(node);
      }
    }
    if (!isRawTemplate(node)) ts.forEachChild(node, visit);
  };
  visit(sf);
  const edits = [];
  for (const [line, nodes] of byLine) {
    const lineStart = lineStarts[line];
    const col = (pos) => width(text.slice(lineStart, pos));
    const indent = width(/^\s*/.exec(lines[line])[0]);
    for (const node of nodes) {
      const start = node.getStart(sf);
      const title = isTestTitle(node);
      // The literal runs past the width, or little follows it on the line (`,`, `);`, ` +`, `.test(`).
      const last = width(text.slice(node.end, lineStart + lines[line].length).trim()) <= 8;
      if ((col(node.end) <= MAX_WIDTH && !last && !title) || !splittable(node)) continue;
      if (ts.isRegularExpressionLiteral(node)) {
        const body = node.text.slice(0, node.text.lastIndexOf("/") + 1);
        const flags = node.text.slice(body.length);
        // Split near the middle, before a `|` if there is one, else after a space, outside `[…]` if it can be;
        // a later pass splits the pieces further.
        const inner = body.slice(1, -1);
        const [bars, spaced, outside, cuts] = [[], [], [], []];
        let inClass = false;
        for (let p = 1; p < inner.length; p++) {
          const c = inner[p - 1];
          if (!afterBackslash(inner, p - 1)) inClass = c === "[" ? true : c === "]" ? false : inClass;
          if (afterBackslash(inner, p)) continue;
          cuts.push(p);
          if (inClass) continue;
          outside.push(p);
          if (inner[p] === "|") bars.push(p);
          if (c === " ") spaced.push(p);
        }
        const middle = inner.length / 2;
        const nearest = (list) => list.reduce((a, b) => (Math.abs(b - middle) < Math.abs(a - middle) ? b : a));
        const central = (list) => list.filter((p) => Math.abs(p - middle) <= inner.length / 4);
        const choice = [bars, spaced, outside, cuts].map(central).find((list) => list.length > 0);
        if (!choice) continue;
        const at = nearest(choice);
        const raw = `${rawPiece(inner.slice(0, at))} + ${rawPiece(inner.slice(at))}`;
        edits.push({ start, end: node.end, text: `new RegExp(${raw}${flags ? `, "${flags}"` : ""})` });
        break;
      }
      const raw = isRawTemplate(node);
      const bodyStart = raw ? node.template.getStart(sf) : start;
      const ranges = raw ? [[bodyStart + 1, node.end - 1]] : textRanges(node, sf);
      const quote = text[bodyStart];
      // Places to split after a space: not the literal's first character, not its last, not escaped.
      const [spaces, commas, anywhere] = [[], [], []];
      for (const [from, to] of ranges) {
        for (let p = from; p < to; p++) {
          if (p === bodyStart + 1 || p + 1 >= node.end - 1 || afterBackslash(text, p)) continue;
          // Neither piece only blanks.
          if (text.slice(bodyStart + 1, p + 1).trim() === "" || text.slice(p + 1, node.end - 1).trim() === "") continue;
          if (text[p] === " ") spaces.push(p);
          else if (text[p] === ",") commas.push(p);
          else if (raw && !afterBackslash(text, p + 1)) anywhere.push(p);
        }
      }
      // Without a space: after a comma (JSON); a String.raw piece (a regular expression's source) anywhere a
      // backslash does not end it.
      const places = spaces.length > 0 ? spaces : commas.length > 0 ? commas : anywhere;
      if (places.length === 0) continue;
      // The longest first piece that ends the line within the width (`… " +`); when none does, the literal
      // will go to a line of its own (indented past this one), so split for that.
      // A test's title ends within the width, its line does not: the formatter gives the title a line of its own
      // once it is not one literal, so it is split in the middle.
      let at = title ? places.find((p) => p - start >= (node.end - start) / 2) : undefined;
      at ??= places.filter((p) => col(p) + 4 <= MAX_WIDTH).at(-1);
      if (at === undefined) {
        const room = MAX_WIDTH - 4 - (indent + 4);
        at = places.filter((p) => col(p) - col(start) <= room).at(-1) ?? places[0];
      }
      const parens = !raw && needsParens(node);
      if (raw) {
        const body = text.slice(bodyStart + 1, node.end - 1);
        const cut = at + 1 - (bodyStart + 1);
        edits.push({ start, end: node.end, text: `${rawPiece(body.slice(0, cut))} + ${rawPiece(body.slice(cut))}` });
        break;
      }
      edits.push({ start: at + 1, end: at + 1, text: `${quote} + ${quote}` });
      if (parens) edits.push({ start, end: start, text: "(" }, { start: node.end, end: node.end, text: ")" });
      break;
    }
  }
  return applyEdits(text, edits);
}

function fixFile(file, text) {
  let out = moveTrailingComments(text, sourceFile(file, text));
  out = rewrapComments(out, sourceFile(file, out));
  out = splitLiterals(out, sourceFile(file, out));
  return out;
}

const files = sourceFiles();
biomeFormat();
for (let pass = 1; ; pass++) {
  let changed = 0;
  for (const file of files) {
    const full = path.join(ROOT, file);
    const text = readFileSync(full, "utf8");
    if (longLines(text).length === 0) continue;
    const out = fixFile(file, text);
    if (out !== text) {
      writeFileSync(full, out);
      changed++;
    }
  }
  if (changed === 0) break;
  if (pass === MAX_PASSES) throw new Error(`format-tree: still changing after ${MAX_PASSES} passes`);
  biomeFormat();
}
let left = 0;
for (const file of files) {
  for (const { line, width: w } of longLines(readFileSync(path.join(ROOT, file), "utf8"))) {
    console.log(`${file}:${line}: ${w} characters, for a person to shorten`);
    left++;
  }
}
console.log(`format-tree: ${files.length} files formatted; ${left} line(s) over ${MAX_WIDTH} left`);
