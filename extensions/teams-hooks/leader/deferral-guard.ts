/**
 * The leader's side of "a deferral file is held to what its gate held" (event/deferral-check.ts;
 * docs/ledger.md): the agents the gates judge can write hook-state/deferrals/, so leader/deferrals.ts
 * asks this module, before it does anything with a file, whose file it is (`ownerOf`), what the
 * ledger holds of it (`ledgerHold`), whether an `applied` claim is believed (`unclaimed`), and has
 * it moved aside (`replace`) or written again from what the leader knows (`rewrite`). Every problem
 * is said: once while it lasts (`tell`), or each time when each is a new edit.
 */
import { rename } from "node:fs";
import path from "node:path";
import { describeError } from "../contract/errors.js";
import { type DeferralRecord, deferralFile, updateDeferral, writeDeferral } from "../deferrals/record.js";
import { type LedgerHold, decisionLogProblem, heldFields, heldOfLog } from "../event/deferral-check.js";
import type { DeferralsLeader, DeferralsLedger } from "./deferrals.js";

export class DeferralGuard {
  readonly #ctx: Pick<DeferralsLeader, "setup" | "warn">;
  readonly #ledger: Pick<DeferralsLedger, "get" | "deferred">;
  /** The leader's deferrals not closed (leader/deferrals.ts): whose file a name is. */
  readonly #known: ReadonlyMap<string, DeferralRecord>;
  /** Problems said, by file and problem (said once while it lasts). */
  readonly #told = new Set<string>();

  constructor(
    ctx: Pick<DeferralsLeader, "setup" | "warn">,
    ledger: Pick<DeferralsLedger, "get" | "deferred">,
    known: ReadonlyMap<string, DeferralRecord>,
  ) {
    this.#ctx = ctx;
    this.#ledger = ledger;
    this.#known = known;
  }

  file(runId: string): string {
    return deferralFile(this.#ctx.setup.identity.teamDir, runId);
  }

  /** Says `message` unless the problem `id` was said already (and has not ended: `untell`). */
  tell(id: string, message: string): void {
    if (this.#told.has(id)) return;
    this.#told.add(id);
    this.#ctx.warn(message);
  }

  untell(id: string): void {
    this.#told.delete(id);
  }

  /** What the ledger holds of the deferral (under the file's key, or under its own if the file's key was edited). */
  ledgerHold(record: DeferralRecord): LedgerHold | null {
    const ledger = this.#ledger;
    const state = ledger.get(record.key);
    const held =
      state?.state === "held" && state.cause === "deferral" && state.deferral === record.runId
        ? { key: record.key, ...state }
        : ledger.deferred().find((h) => h.deferral === record.runId);
    return held ? { key: held.key, eventRunId: held.runId, expiresAt: held.expiresAt, log: held.log } : null;
  }

  /** The deferral whose file is named `name`: one known here, or one the ledger holds (read from its log). */
  async ownerOf(name: string): Promise<DeferralRecord | null> {
    for (const record of this.#known.values()) if (path.basename(this.file(record.runId)) === name) return record;
    const held = this.#ledger.deferred().find((h) => path.basename(this.file(h.deferral)) === name);
    return held ? heldOfLog(held.log, held.deferral) : null;
  }

  /**
   * `record` (held to `reference`) says `applied`: believed only with its decision log (written by
   * hand, the claim would close the gate with nothing applied and no decision named). null: believed;
   * else the record without the claim (also on disk), to be applied or kept open.
   */
  async unclaimed(file: string, record: DeferralRecord, reference: DeferralRecord): Promise<DeferralRecord | null> {
    if (!record.applied) return null;
    const problem = await decisionLogProblem(this.#ctx.setup.identity.teamDir, record.runId, record.applied.logFile);
    if (problem === null) return null;
    this.#ctx.warn(
      `${file}: says applied, but ${problem}: not believed; ${record.decision ? "its decision is applied now" : "its gate stays held"}`,
    );
    const held = heldFields(reference);
    await updateDeferral(this.#ctx.setup.identity.teamDir, record.runId, ({ applied: _claim, ...rest }) => ({
      ...rest,
      ...held,
    })).catch((error: unknown) =>
      this.tell(
        `${file}\0unwritable`,
        `${file}: the claim cannot be taken out (${describeError(error)}); what its gate held is what applies`,
      ),
    );
    const { applied: _claim, ...rest } = record;
    return { ...rest, ...held };
  }

  /**
   * A gate's file that is not its own (unreadable, another run's): moved aside, and written again from what the gate
   * held.
   */
  async replace(file: string, owner: DeferralRecord, why: string): Promise<void> {
    const aside = `${file}.refused-${Date.now()}`;
    const moved = await new Promise<string | null>((resolve) =>
      rename(file, aside, (error) => resolve(error ? describeError(error) : null)),
    );
    if (moved !== null) {
      this.tell(
        file,
        `${why}; the gate of ${owner.key} stays held, but its file cannot be moved aside (${moved}): move it yourself`,
      );
      return;
    }
    this.#told.delete(file);
    this.#ctx.warn(
      `${why}: refused, moved aside to ${path.basename(aside)}; written again from what the gate of ${owner.key} held (run ${owner.runId})`,
    );
    await this.rewrite(owner, null);
  }

  /**
   * Writes a deferral's file again from what the leader knows of it (unless it is there); false if it could not be
   * written.
   */
  async rewrite(record: DeferralRecord, why: string | null): Promise<boolean> {
    const file = this.file(record.runId);
    try {
      await writeDeferral(this.#ctx.setup.identity.teamDir, record);
      if (why !== null)
        this.#ctx.warn(
          `${file} ${why}: written again from what its gate held (${record.decision ? `decided: ${record.decision.decision}` : `held until ${record.expiresAt}`})`,
        );
      this.#told.delete(`${file}\0unwritable`);
      return true;
    } catch (error) {
      this.tell(
        `${file}\0unwritable`,
        `${file} ${why ?? "is not its gate's"}; cannot be written again (${describeError(error)}): its gate stays held`,
      );
      return false;
    }
  }
}

/**
 * A held key whose deferral file is not there (a leader killed between the held run's log and the
 * file, or the file removed by hand): the file again, from the log's `deferral` block. Returns the
 * deferral, or null (and a warning) when the log does not hold it.
 */
export async function restoreFromLog(
  ctx: Pick<DeferralsLeader, "setup" | "warn">,
  key: string,
  logFile: string | null,
  runId: string,
): Promise<DeferralRecord | null> {
  const held = await heldOfLog(logFile, runId);
  if (!held) {
    ctx.warn(
      `${key}: held, but neither its deferral file nor its log (${logFile ?? "none"}) says by which run: judged when its task's gate record does not name run ${runId} either, else it stays held (the lead is told) until qualityGateDeferredRunId is taken out of the task's metadata or the ledger is reset (docs/ledger.md)`,
    );
    return null;
  }
  return writeDeferral(ctx.setup.identity.teamDir, held);
}
