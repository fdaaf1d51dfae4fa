/**
 * The PATH gates and the leader's own helpers are searched through: the absolute folders of the one given, in
 * their order, never an empty or relative folder (searched from the working directory the agents write).
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_SEARCH_PATH,
  absoluteSearchPath,
  withAbsoluteSearchPath,
} from "../../extensions/teams-hooks/runner/search-path.js";

describe("absoluteSearchPath", () => {
  it.each([
    ["/usr/local/bin:/usr/bin:/bin", "/usr/local/bin:/usr/bin:/bin"],
    [":/usr/bin", "/usr/bin"],
    ["/usr/bin:", "/usr/bin"],
    ["/usr/bin::/bin", "/usr/bin:/bin"],
    [".:bin:./node_modules/.bin:/usr/bin:../x", "/usr/bin"],
    ["", DEFAULT_SEARCH_PATH],
    [":.:bin", DEFAULT_SEARCH_PATH],
  ])("%j searches %j", (given, searched) => {
    expect(absoluteSearchPath(given)).toBe(searched);
  });
});

describe("withAbsoluteSearchPath", () => {
  it("returns the same environment when its PATH has nothing to take out, or no PATH", () => {
    const clean = { PATH: "/usr/bin:/bin", HOME: "/home/a" };
    expect(withAbsoluteSearchPath(clean)).toBe(clean);
    const none = { HOME: "/home/a" };
    expect(withAbsoluteSearchPath(none)).toBe(none);
  });

  it("gives a copy with PATH reduced, the other variables as they were, and leaves the original alone", () => {
    const env = { PATH: ":/usr/bin:bin", HOME: "/home/a", TOKEN: "t" };
    expect(withAbsoluteSearchPath(env)).toEqual({ PATH: "/usr/bin", HOME: "/home/a", TOKEN: "t" });
    expect(env.PATH).toBe(":/usr/bin:bin");
  });
});
