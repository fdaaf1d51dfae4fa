/** `pi-teams-hooks schema` through the built bin prints exactly the committed docs/schema/ files. */
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);
const BIN = path.resolve("dist/teams-hooks/bin.js");

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [BIN, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw error;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe("pi-teams-hooks schema", () => {
  it.each(["context", "log", "task", "config"])("schema %s prints the committed docs/schema file", async (name) => {
    const out = await cli(["schema", name]);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(fs.readFileSync(path.resolve(`docs/schema/${name}.schema.json`), "utf8"));
  });

  it("prints the context document's schema by default", async () => {
    const out = await cli(["schema"]);
    expect(out.stdout).toBe(fs.readFileSync(path.resolve("docs/schema/context.schema.json"), "utf8"));
    expect(JSON.parse(out.stdout)).toMatchObject({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      title: expect.stringContaining("contract version 1"),
    });
  });

  it("names the schemas it knows when given another (exit 2)", async () => {
    const out = await cli(["schema", "ledger"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('unknown schema "ledger" (one of context, log, task, config)');
  });
});
