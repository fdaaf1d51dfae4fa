/**
 * The pure parts of the task API: parameters matched and rendered, the listen address, the rate limit.
 */
import { describe, expect, it } from "vitest";
import { isLoopback, parseListen, urlOf } from "../../extensions/teams-hooks/server/address.js";
import { RateLimiter, formatRateLimit, parseRateLimit } from "../../extensions/teams-hooks/server/rate-limit.js";
import {
  findTemplate,
  matchParameters,
  renderTask,
  renderTemplate,
} from "../../extensions/teams-hooks/server/templates.js";
import { TemplateSchema, type TemplateDef } from "../../extensions/teams-hooks/settings/handlers.js";

const deploy: TemplateDef = TemplateSchema.parse({
  subject: "Deploy {{parameters.branch}} to {{ parameters.Env }}",
  description:
    "flags {{parameters.flags}}, dry {{parameters.dry}}, n {{parameters.n}}, extra {{parameters.extra}}, note {{parameters.note}}, {{other.thing}}",
  parameters: {
    branch: { type: "string", required: true },
    env: { type: "string", required: true },
    flags: { type: "array" },
    dry: { type: "boolean" },
    n: { type: "number" },
    extra: { type: "object" },
    note: { type: "string" },
  },
});

describe("matchParameters", () => {
  it("matches names whatever their case and keeps the declared names", () => {
    expect(matchParameters(deploy, { BRANCH: "main", Env: "prod", N: 2 })).toEqual({
      ok: true,
      values: { branch: "main", env: "prod", n: 2 },
    });
  });

  it("names every problem: unknown, twice, wrong kind, missing", () => {
    const result = matchParameters(deploy, {
      branch: "a",
      Branch: "b",
      flags: "x",
      dry: "yes",
      n: null,
      extra: [1],
      bogus: 1,
    });
    expect(result).toEqual({
      ok: false,
      problems: [
        "Branch: given twice, also as branch (names match whatever their case)",
        "flags: expected array, got string",
        "dry: expected boolean, got string",
        "n: expected number, got null",
        "extra: expected object, got array",
        "bogus: unknown parameter (declared: branch, env, flags, dry, n, extra, note)",
        "env: missing (required, string)",
      ].map((message) => ({
        kind: "request_parameter",
        path: `parameters.${message.slice(0, message.indexOf(":"))}`,
        message,
      })),
    });
  });

  it("a template without parameters refuses any", () => {
    const plain = TemplateSchema.parse({ subject: "Plain" });
    expect(matchParameters(plain, {})).toEqual({ ok: true, values: {} });
    expect(matchParameters(plain, { x: 1 })).toEqual({
      ok: false,
      problems: [
        {
          kind: "request_parameter",
          path: "parameters.x",
          message: "x: unknown parameter (the template declares none)",
        },
      ],
    });
  });
});

describe("renderTemplate", () => {
  it.each<[string, Record<string, unknown>, string]>([
    ["Deploy {{parameters.branch}}", { branch: "main" }, "Deploy main"],
    // a value is never expanded again
    ["{{parameters.branch}}", { branch: "{{parameters.env}}" }, "{{parameters.env}}"],
    [
      "{{parameters.branch}}/{{parameters.env}}",
      { branch: "{{parameters.env}}", env: "prod" },
      "{{parameters.env}}/prod",
    ],
    ["{{ parameters.BRANCH }}", { branch: "x" }, "x"],
    ["n={{parameters.n}} ok={{parameters.ok}}", { n: 1.5, ok: false }, "n=1.5 ok=false"],
    ["{{parameters.list}} {{parameters.obj}}", { list: [1, "a"], obj: { a: "b" } }, '[1,"a"] {"a":"b"}'],
    ["a{{parameters.missing}}b", {}, "ab"],
    ["{{other.x}} {{parameters}} {parameters.x}", { x: 1 }, "{{other.x}} {{parameters}} {parameters.x}"],
    ["$& $1 {{parameters.s}}", { s: "$& $1 $$" }, "$& $1 $& $1 $$"],
  ])("%s with %j → %s", (text, values, expected) => {
    expect(renderTemplate(text, values)).toBe(expected);
  });

  it("renders subject and description of a task", () => {
    const values = { branch: "feat/{{parameters.env}}", env: "prod", flags: ["-v"], dry: true, extra: { k: 1 } };
    expect(renderTask(deploy, values)).toEqual({
      subject: "Deploy feat/{{parameters.env}} to prod",
      description: 'flags ["-v"], dry true, n , extra {"k":1}, note , {{other.thing}}',
    });
  });
});

describe("findTemplate", () => {
  it("finds a slug whatever its case", () => {
    expect(findTemplate({ Deploy: deploy }, "DEPLOY")?.slug).toBe("Deploy");
    expect(findTemplate({ Deploy: deploy }, "other")).toBeNull();
  });
});

describe("parseListen / isLoopback", () => {
  it.each<[string, { host: string; port: number }]>([
    ["127.0.0.1:7420", { host: "127.0.0.1", port: 7420 }],
    ["[::1]:0", { host: "::1", port: 0 }],
    ["localhost:8080", { host: "localhost", port: 8080 }],
    ["0.0.0.0:65535", { host: "0.0.0.0", port: 65535 }],
  ])("%s", (text, expected) => {
    expect(parseListen(text)).toEqual(expected);
  });

  it.each(["7420", "127.0.0.1", "127.0.0.1:65536", "::1:7420", "[nothost]:1", "a b:1", ":7420"])(
    "refuses %s",
    (text) => {
      expect(() => parseListen(text)).toThrow(/--listen/);
    },
  );

  it.each<[string, boolean]>([
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["localhost", true],
    ["::1", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.1", false],
    ["example.com", false],
  ])("%s loopback: %s", (host, expected) => {
    expect(isLoopback(host)).toBe(expected);
  });

  it("puts IPv6 in brackets", () => {
    expect(urlOf("::1", 80)).toBe("http://[::1]:80");
    expect(urlOf("127.0.0.1", 80)).toBe("http://127.0.0.1:80");
  });
});

describe("rate limit", () => {
  it.each<[string, number, number]>([
    ["600/min", 600, 60_000],
    ["10/s", 10, 1_000],
    [" 5 / h ", 5, 3_600_000],
  ])("%s", (text, count, periodMs) => {
    expect(parseRateLimit(text, "--rate-limit")).toEqual({ count, periodMs });
    expect(formatRateLimit({ count, periodMs })).toMatch(/^\d+\/(s|min|h)$/);
  });

  it.each(["0/min", "10", "10/day", "-1/s", "1.5/s", "2000000/s"])("refuses %s", (text) => {
    expect(() => parseRateLimit(text, "--rate-limit")).toThrow(/--rate-limit/);
  });

  it("lets a key burst to its count, then refills at its rate, per key", () => {
    let now = 0;
    const limiter = new RateLimiter(() => now);
    const rate = { count: 3, periodMs: 60_000 };
    expect([1, 2, 3].map(() => limiter.take("a", rate))).toEqual([null, null, null]);
    expect(limiter.take("a", rate)).toBe(20); // one token every 20 s
    expect(limiter.take("b", rate)).toBeNull();
    now += 20_000;
    expect(limiter.take("a", rate)).toBeNull();
    expect(limiter.take("a", rate)).toBe(20);
    limiter.retain(new Set(["b"]));
    expect(limiter.take("a", rate)).toBeNull(); // forgotten: a new, full bucket
  });
});
