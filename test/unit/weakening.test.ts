import { describe, expect, it } from "vitest";
import { compareSettings, settingsView, withHeldBack } from "../../extensions/teams-hooks/settings/weakening.js";

describe("settings that can weaken a verdict", () => {
  it.each([
    ["failure mode closed → open", { failureMode: "closed" }, { failureMode: "open" }, true],
    ["failure mode open → closed", { failureMode: "open" }, { failureMode: "closed" }, false],
    ["idle open by default → task_completed open", {}, { failureMode: { task_completed: "open" } }, true],
    ["sandbox auto → off", {}, { sandbox: "off" }, true],
    ["sandbox off → required", { sandbox: "off" }, { sandbox: "required" }, false],
    ["sandbox required → auto", { sandbox: "required" }, {}, true],
    ["confidential true → false", { confidential: true }, { confidential: false }, true],
    ["confidential → true", {}, { confidential: true }, false],
    ["redactEnv a name more", { redactEnv: ["A"] }, { redactEnv: ["A", "B"] }, false],
    ["redactEnv a name less", { redactEnv: ["A", "B"] }, { redactEnv: ["A"] }, true],
    ["exit codes strict", {}, { exitCodes: "strict" }, true],
    ["a projection", {}, { projection: { "on_task_completed.sh": ["task.id"] } }, true],
    ["writable fields", {}, { writableFields: ["metadata", "subject"] }, true],
    ["limits", {}, { limits: { chainDeadlineMs: 1000 } }, true],
  ])("%s: weakens %s", (_name, approved, proposed, weakens) => {
    const changes = compareSettings(settingsView(approved), settingsView(proposed));
    expect(changes).toHaveLength(1);
    expect(changes[0]?.weakens).toBe(weakens);
  });

  it("keeps what is not a weakening key out of the view, and holds back only what weakens", () => {
    const approved = settingsView({ failureMode: "closed", failureAction: "warn" });
    expect(approved).toEqual({ failureMode: "closed" });
    const proposed = { failureMode: "open", sandbox: "required", failureAction: "reopen" };
    const changes = compareSettings(approved, settingsView(proposed));
    const held = changes.filter((c) => c.weakens);
    expect(held.map((c) => c.path)).toEqual(["hooks.failureMode"]);
    expect(withHeldBack(proposed, approved, held)).toEqual({
      failureMode: "closed",
      sandbox: "required",
      failureAction: "reopen",
    });
  });
});
