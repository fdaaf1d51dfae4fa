import { describe, expect, it } from "vitest";
import { blankResult, type RunResult } from "../../extensions/teams-hooks/contract/hook-run.js";
import {
  MIN_TEAM_SECRET_CHARS,
  REDACTED,
  redactCut,
  redactRunResult,
  redactVerdict,
  secretRedactor,
  shapeRedactor,
  teamRedactor,
} from "../../extensions/teams-hooks/runner/redact.js";

// Shapes of real credentials, built here so that no scanner mistakes this file for a leak.
const GHP = `ghp_${"A1b2C3d4E5".repeat(3)}xYz123`;
const GHO = `gho_${"Zz9Yy8Xx7W".repeat(3)}abcdef`;
const PAT = `github_pat_11ABCDEFG0${"abc_DEF_12".repeat(5)}`;
const SK = `sk-proj-${"Ab3dE".repeat(8)}`;
const AKIA = `AKIA${"IOSFODNN7EXAMPLE"}`;
const JWT = [
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
  "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0",
  "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
].join(".");
const PEM = [
  "-----BEGIN RSA PRIVATE KEY-----",
  "MIIEowIBAAKCAQEA7d5C5r8sQq0wm1b9bJ",
  "Vq3xkDn9Y0qSmZ6vT6+Zb9b9a4t/9oZg==",
  "-----END RSA PRIVATE KEY-----",
].join("\n");

describe("shapeRedactor: credential shapes become [redacted], each counted", () => {
  it.each([
    ["a GitHub classic token", `push failed: token ${GHP} rejected`, `push failed: token ${REDACTED} rejected`],
    ["a GitHub OAuth token", `GH=${GHO}`, `GH=${REDACTED}`],
    ["a fine-grained GitHub token", `"${PAT}"`, `"${REDACTED}"`],
    ["an sk- key", `OPENAI_API_KEY=${SK}`, `OPENAI_API_KEY=${REDACTED}`],
    ["an AWS access key id", `aws_access_key_id = ${AKIA}`, `aws_access_key_id = ${REDACTED}`],
    ["a JWT", `cookie: session=${JWT}; Path=/`, `cookie: session=${REDACTED}; Path=/`],
    ["a PEM private key block, whole", `key:\n${PEM}\nnext line`, `key:\n${REDACTED}\nnext line`],
    [
      "an Authorization header (its scheme stays)",
      "> Authorization: Bearer abc.def-123\n< HTTP/1.1 200",
      `> Authorization: Bearer ${REDACTED}\n< HTTP/1.1 200`,
    ],
    ["a JSON authorization value", '{"authorization":"Basic dXNlcjpwYXNz"}', `{"authorization":"Basic ${REDACTED}"}`],
    [
      "a bare token after Authorization",
      "curl -H 'Authorization: a1b2c3d4e5f6'",
      `curl -H 'Authorization: ${REDACTED}'`,
    ],
    [
      "a task API key (its id stays)",
      `PI_TEAMS_API_KEY=pth_0123456789ab_${"aB3-_x".repeat(7)}Q ok`,
      `PI_TEAMS_API_KEY=pth_0123456789ab_${REDACTED} ok`,
    ],
    [
      "a dashboard login token (its id stays)",
      `open http://127.0.0.1:7420/login?token=pthl_0123456789ab_${"aB3-_x".repeat(7)}Q now`,
      `open http://127.0.0.1:7420/login?token=pthl_0123456789ab_${REDACTED} now`,
    ],
    [
      "an Authorization header of another scheme",
      "Authorization: SSWS 00abcDEF9hiJKLmno",
      `Authorization: SSWS ${REDACTED}`,
    ],
    [
      "an Authorization header JSON-escaped in a string",
      '{"log":"{\\"Authorization\\":\\"Bearer abc.def-123\\"}"}',
      `{"log":"{\\"Authorization\\":\\"Bearer ${REDACTED}\\"}"}`,
    ],
    [
      "an Authorization header in a list (Go prints headers so)",
      "map[Authorization:[Bearer abc.def-123] Accept:[*/*]]",
      `map[Authorization:[Bearer ${REDACTED}] Accept:[*/*]]`,
    ],
    [
      "a PGP private key block",
      `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abc123\n=Xy9z\n-----END PGP PRIVATE KEY BLOCK-----`,
      REDACTED,
    ],
  ])("%s", (_name, text, expected) => {
    const out = shapeRedactor(text);
    expect(out.text).toBe(expected);
    expect(out.count).toBe(1);
  });

  it.each([
    ["words that start like a prefix", "the task-list and sk-learn-style slugs, ghost_town, AKIAbc"],
    ["a short gh-like word", "ghp_short and gho_ and github_pat_x"],
    ["prose about authorization", "Authorization: required for this step. authorization = denied"],
    ["a dotted word that is not a JWT", "eyJust.eyJoking.now"],
    ["a public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"],
    ["an AKIA-like run that is too long", `${AKIA}XYZ`],
  ])("leaves %s alone", (_name, text) => {
    expect(shapeRedactor(text)).toEqual({ text, count: 0 });
  });

  it("a key block cut before its END line goes to the end of its lines", () => {
    const cut = PEM.split("\n").slice(0, 2).join("\n");
    expect(shapeRedactor(`before\n${cut}`).text).toBe(`before\n${REDACTED}`);
  });

  it.each([
    [
      "indented",
      PEM.split("\n")
        .slice(0, 3)
        .map((l) => `  ${l}`)
        .join("\n"),
    ],
    ["JSON-escaped", JSON.stringify(PEM.split("\n").slice(0, 3).join("\n")).slice(0, -1)],
    ["joined by blanks (an unquoted echo)", PEM.split("\n").slice(0, 3).join(" ").slice(0, -4)],
  ])("a key block cut before its END line, %s, goes to the end of the text", (_name, cut) => {
    const out = shapeRedactor(`before\n${cut}`).text;
    expect(out.startsWith("before\n")).toBe(true);
    expect(out).not.toMatch(/MIIE|Vq3x/);
  });

  it("is idempotent: redacting twice counts once", () => {
    const text = `Authorization: Bearer ${GHP} and ${AKIA}`;
    const once = shapeRedactor(text);
    expect(once.count).toBe(2);
    expect(shapeRedactor(once.text)).toEqual({ text: once.text, count: 0 });
  });
});

describe("secret values", () => {
  it("a long value goes wherever it is, in every spelling; a short one only where it stands alone", () => {
    const redact = secretRedactor(["s3cr3t/value+x", "ab1"]);
    const out = redact(
      `x s3cr3t/value+x ${JSON.stringify("s3cr3t/value+x").replaceAll("/", "\\/")} ${encodeURIComponent("s3cr3t/value+x")} ab1 tab1e`,
    );
    expect(out.text).toBe(`x ${REDACTED} "${REDACTED}" ${REDACTED} ${REDACTED} tab1e`);
    expect(out.count).toBe(4);
  });

  it("a value with HTML characters as Go's and Rails' JSON encoders write it, and a value's trimmed form", () => {
    const redact = teamRedactor({ PASS: "p&ss<w>rd-1234", MOUNTED: "tok-abcdef123456\n" }, ["PASS", "MOUNTED"]);
    expect(redact('{"go":"p\\u0026ss\\u003cw\\u003erd-1234"}').text).toBe(`{"go":"${REDACTED}"}`);
    // A secret mounted from a file ends in a newline; a tool that prints it trims it.
    expect(redact("token=tok-abcdef123456.").text).toBe(`token=${REDACTED}.`);
  });

  it("a team redactor ignores values under the minimum (a flag like 1 would turn every 1 into [redacted])", () => {
    const redact = teamRedactor({ FLAG: "1", TOKEN: "tok-0000-secret" }, ["FLAG", "TOKEN", "UNSET"]);
    expect(MIN_TEAM_SECRET_CHARS).toBe(4);
    expect(redact("1 test failed with tok-0000-secret").text).toBe(`1 test failed with ${REDACTED}`);
  });

  it("a cut text's last word is redacted when it begins like a credential or like a secret", () => {
    const redact = teamRedactor({ TOKEN: "tok-0000-secret" }, ["TOKEN"]);
    expect(redactCut("token=ghp_A1b2", redact, true)).toEqual({ text: `token=${REDACTED}`, count: 1 });
    expect(redactCut("token=tok-00", redact, true)).toEqual({ text: `token=${REDACTED}`, count: 1 });
    // Not cut, or an ordinary last word: left alone.
    expect(redactCut("token=ghp_A1b2", redact, false).count).toBe(0);
    expect(redactCut("all tests passed", redact, true).count).toBe(0);
  });
});

describe("redactRunResult", () => {
  it("redacts output, the verdict and an invalid verdict's text, counts, and keeps the cut note", () => {
    const base = blankResult({ ran: true, hookPath: "/h", command: ["bash", "/h"], runId: "r" });
    const result: RunResult = {
      ...base,
      outcome: "failed",
      exitCode: 1,
      stdout: `ok\n… (truncated, 10 bytes omitted)`.replace("ok", `token ${GHP}`),
      stdoutDroppedBytes: 10,
      stderr: `AKIA: ${AKIA}`,
      verdict: { decision: "deny", reason: `leaked ${SK}`, message: JWT, source: "stdout" },
    };
    const out = redactRunResult(result, teamRedactor({}, []));
    expect(out.stdout).toBe(`token ${REDACTED}\n… (truncated, 10 bytes omitted)`);
    expect(out.stderr).toBe(`AKIA: ${REDACTED}`);
    expect(out.verdict).toMatchObject({ reason: `leaked ${REDACTED}`, message: REDACTED });
    expect(out.redactions).toBe(4);
    expect(
      redactRunResult(
        { ...base, outcome: "error", errorKind: "invalid_verdict", error: `bad reason ${GHO}` },
        teamRedactor({}, []),
      ).error,
    ).toBe(`bad reason ${REDACTED}`);
    // Our own words are not the hook's: a spawn error stays as it is.
    expect(
      redactRunResult(
        { ...base, outcome: "error", errorKind: "spawn", error: `spawn ${GHO} ENOENT` },
        teamRedactor({}, []),
      ).error,
    ).toBe(`spawn ${GHO} ENOENT`);
  });
});

describe("redactVerdict of a patch verdict: its merge patch", () => {
  it("every string at any depth, other values as they are; __proto__ stays data", () => {
    const redact = teamRedactor({}, []);
    const text = (value: string): string => redact(value).text;
    const patch = JSON.parse(
      `{"metadata":{"token":"${GHP}","list":["a","${AKIA}",3,null],"n":1,"ok":true,"__proto__":{"k":"${SK}"}}}`,
    ) as Record<string, unknown>;
    expect(JSON.stringify(redactVerdict({ decision: "patch", patch }, text).patch)).toBe(
      `{"metadata":{"token":"${REDACTED}","list":["a","${REDACTED}",3,null],"n":1,"ok":true,"__proto__":{"k":"${REDACTED}"}}}`,
    );
    expect(({} as Record<string, unknown>).k).toBeUndefined();
  });

  it("a key that holds a secret is redacted like a value", () => {
    const redact = teamRedactor({}, []);
    const text = (value: string): string => redact(value).text;
    const patch = { metadata: { [GHP]: 1, [`by ${AKIA}`]: { ok: true } } };
    expect(JSON.stringify(redactVerdict({ decision: "patch", patch }, text).patch)).toBe(
      `{"metadata":{"${REDACTED}":1,"by ${REDACTED}":{"ok":true}}}`,
    );
  });
});

describe("redactVerdict (what a hook or a handler answered)", () => {
  it("every string but the decision and its source, under any key, the keys the contract does not name too", () => {
    const redact = teamRedactor({ DEPLOY: "deploy-secret-0042" }, ["DEPLOY"]);
    const text = (value: string): string => redact(value).text;
    const verdict = {
      decision: "deny",
      source: "stdout",
      code: "deploy-secret-0042",
      reason: `token ${GHP}`,
      [GHP]: { debug: ["deploy-secret-0042"] },
    };
    expect(JSON.stringify(redactVerdict(verdict, text))).toBe(
      `{"decision":"deny","source":"stdout","code":"${REDACTED}","reason":"token ${REDACTED}","${REDACTED}":{"debug":["${REDACTED}"]}}`,
    );
  });
});
