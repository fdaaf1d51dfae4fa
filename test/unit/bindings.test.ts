/**
 * A binding's shape (gates/bindings.ts): it names a handler or a gate file inside a hooks dir, never
 * both, never a path that leaves the dir; a file binding has no handler's `answer`.
 */
import { describe, expect, it } from "vitest";
import { BindingRequestSchema } from "../../extensions/teams-hooks/gates/bindings.js";

const base = { name: "review", events: ["task_completed"] };

function problems(value: unknown): string[] {
  const parsed = BindingRequestSchema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => i.path.join("."));
}

describe("a binding's file", () => {
  it.each(["gates/review.sh", "review.sh", "on_task_completed.d/10-lint.sh", ".hidden", "a/..b"])(
    "%j is a path inside a hooks dir",
    (file) => expect(problems({ ...base, file })).toEqual([]),
  );
  it.each(["../config.json", "a/../../b", "/etc/passwd", "./x", "a//b", "a/.", "..", "a/b/", "a b.sh", ""])(
    "%j is refused",
    (file) => expect(problems({ ...base, file })).toEqual(["file"]),
  );
});

describe("what a binding names", () => {
  it("a handler or a file, one of them", () => {
    expect(problems({ ...base, handler: "ci" })).toEqual([]);
    expect(problems(base)).toEqual(["handler"]);
    expect(problems({ ...base, handler: "ci", file: "review.sh" })).toEqual(["file"]);
  });
  it("a file binding has no handler's answer", () => {
    expect(problems({ ...base, file: "review.sh", settings: { answer: "held" } })).toEqual(["settings.answer"]);
    expect(problems({ ...base, file: "review.sh", settings: { timeoutMs: 5000, enabled: false } })).toEqual([]);
  });
});
