import { describe, expect, it } from "vitest";
import { createdByOf } from "../../extensions/teams-hooks/contract/work.js";

describe("createdByOf", () => {
  it("cuts the names it reads from metadata a worker can write to 256 characters", () => {
    const long = "t".repeat(10_000);
    const api = createdByOf({ metadata: { taskApi: { template: long, key: "ci" } } });
    expect(api).toEqual({ kind: "api", template: `${"t".repeat(255)}…`, key: "ci" });
    const followup = createdByOf({ metadata: { qualityGateFollowupFor: "1:x", qualityGateFollowupHook: long } });
    expect(followup).toMatchObject({ kind: "followup", hook: `${"t".repeat(255)}…` });
    expect(createdByOf({ metadata: {} })).toEqual({ kind: "worker" });
  });
});
