import { describe, expect, it } from "vitest";
import { isSafeName, sanitizeName } from "../../extensions/teams-hooks/team/paths.js";

describe("isSafeName: a name that names a file of its own", () => {
  it.each([
    ["3", true],
    ["task-12_b", true],
    ["Alice", true],
    ["a/b", false],
    ["a.b", false], // pi-agent-teams maps the dot too: a.b.json would be a-b.json
    ["a b", false],
    ["..", false],
    ["", false],
    ["ä", false],
  ])("%j: %s", (name, safe) => {
    expect(isSafeName(name)).toBe(safe);
    // Safe exactly when the file name made from it is the name itself.
    expect(sanitizeName(name) === name && name !== "").toBe(safe);
  });
});
