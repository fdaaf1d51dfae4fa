/**
 * API keys of the task API: `<teamsRoot>/.pi-teams-hooks/keys.json` (folder 0700, file 0600), written
 * under the lock protocol. A key is `pth_<id>_<secret>`: `id` (12 hex digits) finds its record and is
 * shown by `keys list` as the prefix `pth_<id>`; the secret is 32 random bytes. The file holds a
 * random salt and sha256(salt ‖ key) per key, never the key: a key with 256 random bits cannot be
 * guessed from its hash, so a slow password hash would add only latency to every request. Hashes are
 * compared with `timingSafeEqual`, and an unknown id is compared against a dummy, so the time of a
 * refusal says nothing about which part was wrong.
 *
 * A key with the scope logs:read may also hold one unused dashboard login token (`pthl_<id>_<secret>`,
 * in a one-time URL): its salted hash and expiry, kept the same way and removed when it is used.
 *
 * A key may be disabled (`keys disable`: `disabledAt` in its record) and enabled again (`keys enable`,
 * the same secret): while disabled it is refused as an unknown key is, everywhere, and a dashboard
 * session begun before it was enabled again stays refused (`enabledAt`).
 *
 * A running server re-reads the file when its stat signature changes (checked on every request: one
 * `stat`), so `keys revoke` and `keys disable` take effect on the next request.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { HooksError, describeError, errnoCode } from "../contract/errors.js";
import { readJsonFile, writeJsonAtomic } from "../team/json-file.js";
import { withLock } from "../team/lock.js";
import { isTeamName } from "../team/paths.js";
import { type RateLimit, formatRateLimit } from "./rate-limit.js";

export const SCOPES = ["tasks:create", "tasks:read", "gates:decide", "gates:read", "gates:admin", "logs:read"] as const;
export type Scope = (typeof SCOPES)[number];

const KEY_PATTERN = /^pth_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
/** A one-time dashboard login token: `pthl_<id of its key>_<secret>`, the secret 32 random bytes. */
const LOGIN_PATTERN = /^pthl_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
const KEY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const RateLimitSchema = z.object({ count: z.number().int().min(1), periodMs: z.number().int().min(1) });
const SaltSchema = z.string().regex(/^[0-9a-f]{32}$/);
const HashSchema = z.string().regex(/^[0-9a-f]{64}$/);
/** The unused one-time login token of a key with logs:read: its salted hash and when it expires; gone once used. */
const LoginSchema = z.object({ salt: SaltSchema, hash: HashSchema, expiresAt: z.iso.datetime() });

// The file is writable by whoever can write the teams root, and its names are printed (`key added:
// "<name>" …`) and recorded (`api:<name>`): a name, team or slug that `keys create` would refuse (a
// newline, a terminal escape that erases the line saying the key was added) refuses the whole file.
const KeyRecordSchema = z.object({
  name: z.string().regex(KEY_NAME, "must be letters, digits, _ . - (at most 64, starting with a letter or digit)"),
  id: z.string().regex(/^[0-9a-f]{12}$/),
  salt: SaltSchema,
  hash: HashSchema,
  scopes: z.array(z.enum(SCOPES)),
  teams: z.array(
    z
      .string()
      .refine((team) => isTeamName(team), "must be a team dir name (letters, digits, _ and -, not starting with _)"),
  ),
  /**
   * Template slugs (lower case) this key may use. Empty or absent: none. null: every template of its
   * teams, written with `allTemplates: true` by `keys create --all-templates`; a record with null and
   * no `allTemplates` was written before the allowlist was required, when null was the default, and
   * keeps its meaning (`keys list` marks it). See docs/security.md "The task API's keys".
   */
  templates: z.array(z.string().regex(SLUG, "must be a lower-case template slug")).nullable().optional(),
  /** Written with `templates: null` by `--all-templates` (a version without it reads null as every template too). */
  allTemplates: z.literal(true).optional(),
  /** This key's own rate; null: the server's. */
  rateLimit: RateLimitSchema.nullable(),
  createdAt: z.string(),
  /** Added with the dashboard: a keys file written before it has none, and loads as it is. */
  login: LoginSchema.optional(),
  /** When `keys disable` disabled it; absent while it is enabled. */
  disabledAt: z.iso.datetime().optional(),
  /** When `keys enable` last enabled it again: dashboard sessions begun before it are refused. */
  enabledAt: z.iso.datetime().optional(),
});
type KeyRecord = z.infer<typeof KeyRecordSchema>;

const KeysFileSchema = z.object({ version: z.literal(1), keys: z.array(KeyRecordSchema) });

/** What a key may do, as `keys list` shows it and the server checks it; never its hash. */
export interface KeyInfo {
  name: string;
  prefix: string;
  scopes: Scope[];
  teams: string[];
  /** The templates it may use (empty: none); null: every template of its teams. */
  templates: string[] | null;
  /**
   * How it came to allow every template (null: it does not): `all-templates` (`keys create
   * --all-templates`), or `legacy` (made before an allowlist was required, when that was the default).
   */
  allTemplates: "all-templates" | "legacy" | null;
  rateLimit: RateLimit | null;
  createdAt: string;
  /** When it was disabled (`keys disable`): refused everywhere until `keys enable`; null while enabled. */
  disabledAt: string | null;
  /** When it was last enabled again (null: never disabled and enabled): sessions begun before it are refused. */
  enabledAt: string | null;
}

export interface KeySpec {
  name: string;
  scopes: Scope[];
  teams: string[];
  /** The templates it may use (empty: none); null: every template (`--all-templates`). */
  templates: string[] | null;
  rateLimit: RateLimit | null;
}

/** The scopes a key's templates limit: a key with one of them needs `--templates` or `--all-templates`. */
const TEMPLATE_SCOPES: readonly Scope[] = ["tasks:create", "tasks:read", "gates:decide"];

export function keysFile(teamsRoot: string): string {
  return path.join(teamsRoot, ".pi-teams-hooks", "keys.json");
}

/**
 * A key's spec from the command line's comma lists; E_USAGE naming the flag and the value. Team names
 * are team dir names under the teams root (`_hooks` and other `_`/`.` names are not teams).
 */
export function keySpec(input: {
  name: string | undefined;
  scopes: string | undefined;
  teams: string | undefined;
  templates: string | undefined;
  allTemplates?: boolean;
  rateLimit: RateLimit | null;
}): KeySpec {
  const { name } = input;
  if (name === undefined || !KEY_NAME.test(name))
    throw new HooksError(
      "E_USAGE",
      name === undefined
        ? "--name is required"
        : `--name "${name}" must be letters, digits, _ . - (at most 64, starting with a letter or digit)`,
    );
  const scopes = list(input.scopes, "--scopes");
  for (const scope of scopes)
    if (!(SCOPES as readonly string[]).includes(scope))
      throw new HooksError("E_USAGE", `--scopes: unknown scope "${scope}" (scopes: ${SCOPES.join(", ")})`);
  const teams = list(input.teams, "--teams");
  for (const team of teams)
    if (!isTeamName(team))
      throw new HooksError(
        "E_USAGE",
        `--teams: "${team}" is not a team dir name (letters, digits, _ and -, not starting with _)`,
      );
  const all = input.allTemplates === true;
  if (all && input.templates !== undefined) {
    throw new HooksError("E_USAGE", "--templates and --all-templates: give one of them");
  }
  let templates: string[] | null = all ? null : [];
  if (input.templates !== undefined) {
    templates = list(input.templates, "--templates").map((t) => t.toLowerCase());
    for (const slug of templates)
      if (!SLUG.test(slug)) throw new HooksError("E_USAGE", `--templates: "${slug}" is not a template slug`);
  } else if (!all && scopes.some((s) => (TEMPLATE_SCOPES as readonly string[]).includes(s))) {
    // An empty allowlist allows nothing: a key that could use templates says which, or says every one.
    const limited = TEMPLATE_SCOPES.filter((s) => scopes.includes(s)).join(", ");
    throw new HooksError(
      "E_USAGE",
      `--templates is required for a key with ${limited}: the templates it may use (--templates deploy,review), or --all-templates for every template of its teams`,
    );
  }
  return {
    name,
    scopes: unique(scopes) as Scope[],
    teams: unique(teams),
    templates: templates && unique(templates),
    rateLimit: input.rateLimit,
  };
}

function list(value: string | undefined, flag: string): string[] {
  const items = (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (items.length === 0) throw new HooksError("E_USAGE", `${flag} is required: a comma-separated list`);
  return items;
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

/** Creates a key; returns it (to show once) and what was stored about it. E_USAGE when the name is taken. */
export async function createKey(
  teamsRoot: string,
  spec: KeySpec,
  now: Date = new Date(),
): Promise<{ key: string; info: KeyInfo }> {
  const file = ensureKeysDir(teamsRoot);
  return withLock(
    file,
    async () => {
      const records = await readRecords(file);
      if (records.some((r) => r.name === spec.name))
        throw new HooksError(
          "E_USAGE",
          `a key named "${spec.name}" exists already (revoke it first: pi-teams-hooks serve keys revoke ${spec.name})`,
        );
      let id = randomBytes(6).toString("hex");
      while (records.some((r) => r.id === id)) id = randomBytes(6).toString("hex");
      const key = `pth_${id}_${randomBytes(32).toString("base64url")}`;
      const salt = randomBytes(16);
      const record: KeyRecord = {
        name: spec.name,
        id,
        scopes: spec.scopes,
        teams: spec.teams,
        templates: spec.templates,
        ...(spec.templates === null ? { allTemplates: true as const } : {}),
        rateLimit: spec.rateLimit,
        salt: salt.toString("hex"),
        hash: hashKey(salt, key).toString("hex"),
        createdAt: now.toISOString(),
      };
      await writeRecords(file, [...records, record]);
      return { key, info: infoOf(record) };
    },
    { label: `pi-teams-hooks serve keys create ${spec.name}` },
  );
}

/** Every key's metadata, in creation order. */
export async function listKeys(teamsRoot: string): Promise<KeyInfo[]> {
  return (await readRecords(keysFile(teamsRoot))).map(infoOf);
}

/** Removes the key called `name`; false when there is none. */
export async function revokeKey(teamsRoot: string, name: string): Promise<boolean> {
  const file = keysFile(teamsRoot);
  if ((await readRecords(file)).every((r) => r.name !== name)) return false;
  return withLock(
    file,
    async () => {
      const records = await readRecords(file);
      const kept = records.filter((r) => r.name !== name);
      if (kept.length === records.length) return false;
      await writeRecords(file, kept);
      return true;
    },
    { label: `pi-teams-hooks serve keys revoke ${name}` },
  );
}

/** What `setKeyEnabled` found: no such key, the key already so, or the key changed (disabled or enabled now). */
type KeySwitch = "unknown" | "unchanged" | "changed";

/**
 * Disables (`enabled` false) or enables again the key called `name`, its secret unchanged. Disabling
 * drops its unused login token too: a disabled key cannot start a dashboard session.
 */
export async function setKeyEnabled(
  teamsRoot: string,
  name: string,
  enabled: boolean,
  now: Date = new Date(),
): Promise<KeySwitch> {
  const file = keysFile(teamsRoot);
  if ((await readRecords(file)).every((r) => r.name !== name)) return "unknown";
  return withLock(
    file,
    async (): Promise<KeySwitch> => {
      const records = await readRecords(file);
      const record = records.find((r) => r.name === name);
      if (!record) return "unknown";
      if ((record.disabledAt === undefined) === enabled) return "unchanged";
      const { disabledAt: _was, ...rest } = withoutLogin(record);
      const changed: KeyRecord = enabled
        ? { ...rest, enabledAt: now.toISOString() }
        : { ...rest, disabledAt: now.toISOString() };
      await writeRecords(
        file,
        records.map((r) => (r === record ? changed : r)),
      );
      return "changed";
    },
    { label: `pi-teams-hooks serve keys ${enabled ? "enable" : "disable"} ${name}` },
  );
}

/**
 * A new one-time login token for the key called `name`, which must have logs:read: only its salted
 * hash and `expiresAt` are kept, in place of any unused one. E_USAGE when there is no such key, or it
 * lacks the scope.
 */
export async function issueLogin(teamsRoot: string, name: string, expiresAt: Date): Promise<string> {
  const file = ensureKeysDir(teamsRoot);
  return withLock(
    file,
    async () => {
      const records = await readRecords(file);
      const record = records.find((r) => r.name === name);
      if (!record)
        throw new HooksError("E_USAGE", `no key named "${name}" in ${file} (see: pi-teams-hooks serve keys list)`);
      if (record.disabledAt !== undefined)
        throw new HooksError(
          "E_USAGE",
          `key "${name}" is disabled (since ${record.disabledAt}), so it cannot log in to the dashboard (enable it: pi-teams-hooks serve keys enable ${name})`,
        );
      if (!record.scopes.includes("logs:read")) {
        throw new HooksError(
          "E_USAGE",
          `key "${name}" does not have the scope logs:read, so it cannot log in to the dashboard (a key that can: pi-teams-hooks serve keys create --name NAME --scopes logs:read --teams TEAM)`,
        );
      }
      const token = `pthl_${record.id}_${randomBytes(32).toString("base64url")}`;
      const salt = randomBytes(16);
      const login = {
        salt: salt.toString("hex"),
        hash: hashKey(salt, token).toString("hex"),
        expiresAt: expiresAt.toISOString(),
      };
      await writeRecords(
        file,
        records.map((r) => (r === record ? { ...r, login } : r)),
      );
      return token;
    },
    { label: `pi-teams-hooks serve keys login ${name}` },
  );
}

/**
 * Spends a one-time login token: the key it logs in as when the token is its key's unused one, not
 * expired at `now`, and the key still has logs:read; null otherwise (one answer for every reason).
 * The check is made again under the keys file's lock, and the token removed there, so two servers
 * given the same link cannot both accept it. A file that cannot be read throws E_CONFIG.
 */
export async function redeemLogin(teamsRoot: string, token: string, now: Date): Promise<KeyInfo | null> {
  const id = LOGIN_PATTERN.exec(token)?.[1];
  if (id === undefined) return null;
  const file = keysFile(teamsRoot);
  // First without the lock: a wrong token, the usual case of a stray request, then writes nothing and waits for no one.
  if (!loginMatches(await readRecords(file), id, token, now)) return null;
  return withLock(
    file,
    async () => {
      const records = await readRecords(file);
      const record = loginMatches(records, id, token, now);
      if (!record) return null;
      await writeRecords(
        file,
        records.map((r) => (r === record ? withoutLogin(r) : r)),
      );
      return infoOf(record);
    },
    { label: "pi-teams-hooks serve (a dashboard login)" },
  );
}

function loginMatches(records: readonly KeyRecord[], id: string, token: string, now: Date): KeyRecord | null {
  const record = records.find((r) => r.id === id);
  const salt = Buffer.from(record?.login?.salt ?? DUMMY.salt, "hex");
  const expected = Buffer.from(record?.login?.hash ?? DUMMY.hash, "hex");
  const equal = timingSafeEqual(hashKey(salt, token), expected);
  if (!record?.login || !equal || record.disabledAt !== undefined) return null;
  return Date.parse(record.login.expiresAt) > now.getTime() && record.scopes.includes("logs:read") ? record : null;
}

function withoutLogin(record: KeyRecord): KeyRecord {
  const { login: _used, ...rest } = record;
  return rest;
}

/** The keys of a running server: re-read when the file changed, checked on every request. */
export class KeyStore {
  readonly file: string;
  readonly #log: (level: "info" | "warn", message: string) => void;
  #signature = "";
  #records: KeyRecord[] | null = null;
  #problem: string | null = null;

  /** `log` hears of a keys file that cannot be used, and of every key added or removed while the server runs. */
  constructor(teamsRoot: string, log: (level: "info" | "warn", message: string) => void) {
    this.file = keysFile(teamsRoot);
    this.#log = log;
  }

  /**
   * The key an `Authorization` header carries: its info, null when there is no valid key (missing,
   * malformed, unknown, revoked, disabled), or `unavailable` when the keys file cannot be read (fail closed).
   */
  async authenticate(header: string | undefined): Promise<KeyInfo | null | "unavailable"> {
    await this.refresh();
    if (this.#problem !== null) return "unavailable";
    const presented = /^Bearer +(\S+) *$/i.exec(header ?? "")?.[1] ?? "";
    const id = KEY_PATTERN.exec(presented)?.[1];
    const record = id === undefined ? undefined : this.#records?.find((r) => r.id === id);
    const salt = Buffer.from(record?.salt ?? DUMMY.salt, "hex");
    const expected = Buffer.from(record?.hash ?? DUMMY.hash, "hex");
    const equal = timingSafeEqual(hashKey(salt, presented), expected);
    return record && equal && record.disabledAt === undefined ? infoOf(record) : null;
  }

  /**
   * The key whose id a signed session names (`pth_<id>` without `pth_`), as the file says now: null
   * when it is gone (revoked) or disabled, `unavailable` when the keys file cannot be read.
   */
  async byId(id: string): Promise<KeyInfo | null | "unavailable"> {
    await this.refresh();
    if (this.#problem !== null) return "unavailable";
    const record = this.#records?.find((r) => r.id === id);
    return record && record.disabledAt === undefined ? infoOf(record) : null;
  }

  /** The names of the keys in force (for the rate limiter to forget the others). */
  names(): Set<string> {
    return new Set((this.#records ?? []).map((r) => r.name));
  }

  /** How many keys are in force, after a look at the file. */
  async count(): Promise<number> {
    await this.refresh();
    return this.#records?.length ?? 0;
  }

  /**
   * Re-reads the file when its stat signature changed (a file changed between the stat and the read is read again next
   * time).
   */
  async refresh(): Promise<void> {
    let signature: string;
    let mode = 0;
    try {
      const info = statSync(this.file);
      signature = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
      mode = info.mode & 0o777;
    } catch (error) {
      signature = errnoCode(error) === "ENOENT" ? "missing" : `error:${errnoCode(error) ?? describeError(error)}`;
    }
    if (signature === this.#signature) return;
    let records: KeyRecord[] = [];
    let problem: string | null = null;
    try {
      records = await readRecords(this.file);
    } catch (error) {
      problem = describeError(error);
    }
    // Set together, after the read: a request never sees the new signature with the old keys.
    const before = this.#records;
    this.#signature = signature;
    this.#records = problem === null ? records : [];
    this.#problem = problem;
    if (problem !== null) this.#log("warn", `${problem} — every request is refused (503) until the file is fixed`);
    if ((mode & 0o077) !== 0)
      this.#log(
        "warn",
        `${this.file}: mode ${mode.toString(8)} lets others read the key hashes: chmod 600 '${this.file}'`,
      );
    if (before !== null && problem === null) {
      // Whoever can write the teams root can add a key: every change is said, with what the key may do.
      const old = new Map(before.map((r) => [r.id, r]));
      const now = new Set(records.map((r) => r.id));
      for (const r of records) {
        if (old.has(r.id)) continue;
        const [scopes, teams, templates] = [r.scopes.join(", "), r.teams.join(", "), describeTemplates(infoOf(r))];
        const what = `scopes ${scopes}; teams ${teams}; templates ${templates}`;
        this.#log("info", `key added: "${r.name}" (pth_${r.id}): ${what}`);
      }
      for (const r of before) if (!now.has(r.id)) this.#log("info", `key removed: "${r.name}" (pth_${r.id})`);
      // A key changed in place is in force at once: disabled or enabled (`serve keys`), or edited by hand
      // (`serve keys` never does): said, field by field, and warned when it may now do more than before.
      for (const r of records) {
        const was = old.get(r.id);
        if (!was) continue;
        if ((was.disabledAt === undefined) !== (r.disabledAt === undefined))
          this.#log("info", `key ${r.disabledAt === undefined ? "enabled" : "disabled"}: "${r.name}" (pth_${r.id})`);
        const change = keyChange(was, r);
        if (change === null) continue;
        const level = change.widened ? "warn" : "info";
        const widened = change.widened ? " — it may now do more than before: revoke it if you did not mean this" : "";
        this.#log(level, `key changed: "${r.name}" (pth_${r.id}): ${change.fields.join("; ")}${widened}`);
      }
    }
  }
}

/**
 * What differs between two records of one key (by id), as `field before → after`, and whether it may
 * do more now: a scope, a team or a template added, every template allowed, a secret replaced, or a
 * rate raised or lifted. Null when nothing a request depends on changed (a login link issued, say).
 */
export function keyChange(was: KeyRecord, now: KeyRecord): { fields: string[]; widened: boolean } | null {
  const fields: string[] = [];
  let widened = false;
  const list = (items: readonly string[]): string => (items.length === 0 ? "(none)" : items.join(", "));
  const grew = (a: readonly string[], b: readonly string[]): boolean => b.some((item) => !a.includes(item));
  if (was.name !== now.name) fields.push(`name "${was.name}" → "${now.name}"`);
  if (list(was.scopes) !== list(now.scopes)) {
    fields.push(`scopes ${list(was.scopes)} → ${list(now.scopes)}`);
    widened ||= grew(was.scopes, now.scopes);
  }
  if (list(was.teams) !== list(now.teams)) {
    fields.push(`teams ${list(was.teams)} → ${list(now.teams)}`);
    widened ||= grew(was.teams, now.teams);
  }
  const [before, after] = [describeTemplates(infoOf(was)), describeTemplates(infoOf(now))];
  if (before !== after) {
    fields.push(`templates ${before} → ${after}`);
    const [a, b] = [infoOf(was).templates, infoOf(now).templates];
    widened ||= b === null ? a !== null : a !== null && grew(a, b);
  }
  const rate = (r: KeyRecord["rateLimit"]): string => (r === null ? "the server's" : `${r.count}/${r.periodMs}ms`);
  if (rate(was.rateLimit) !== rate(now.rateLimit)) {
    fields.push(`rate ${rate(was.rateLimit)} → ${rate(now.rateLimit)}`);
    const [a, b] = [was.rateLimit, now.rateLimit];
    // The server's rate may be higher than the key's own was: a change to or from it counts as a widening.
    widened ||= a === null || b === null || b.count / b.periodMs > a.count / a.periodMs;
  }
  if (was.hash !== now.hash || was.salt !== now.salt) {
    fields.push("secret replaced (the old key no longer works; another does)");
    widened = true;
  }
  return fields.length === 0 ? null : { fields, widened };
}

const DUMMY = { salt: "00".repeat(16), hash: "00".repeat(32) };

function hashKey(salt: Buffer, key: string): Buffer {
  return createHash("sha256").update(salt).update(key, "utf8").digest();
}

const LEGACY_WORDS = "made before --templates was required";

function infoOf(record: KeyRecord): KeyInfo {
  const templates = record.templates === undefined ? [] : record.templates;
  const allTemplates = templates !== null ? null : record.allTemplates ? "all-templates" : "legacy";
  const { name, scopes, teams, rateLimit, createdAt } = record;
  const [disabledAt, enabledAt] = [record.disabledAt ?? null, record.enabledAt ?? null];
  const prefix = `pth_${record.id}`;
  return { name, prefix, scopes, teams, templates, allTemplates, rateLimit, createdAt, disabledAt, enabledAt };
}

/** `deploy, review`, `(none)`, `(all)`, or `(all: made before --templates was required)`: keys list, serve's output. */
export function describeTemplates(info: Pick<KeyInfo, "templates" | "allTemplates">): string {
  if (info.templates === null) return info.allTemplates === "legacy" ? `(all: ${LEGACY_WORDS})` : "(all)";
  return info.templates.length === 0 ? "(none)" : info.templates.join(", ");
}

/** The records of the file; none when it is missing; E_CONFIG when it is not a keys file. */
async function readRecords(file: string): Promise<KeyRecord[]> {
  const read = await readJsonFile(file, KeysFileSchema);
  if (read.ok) return read.value.keys;
  if (read.problem.kind === "missing") return [];
  throw new HooksError("E_CONFIG", `${read.problem.message} (the API keys file)`);
}

async function writeRecords(file: string, keys: KeyRecord[]): Promise<void> {
  await writeJsonAtomic(file, { version: 1, keys }, { mode: 0o600 });
}

/**
 * The keys folder, 0700 (tightened if it was created otherwise), inside an existing teams root; returns the keys file's
 * path.
 */
export function ensureKeysDir(teamsRoot: string): string {
  const file = keysFile(teamsRoot);
  const dir = path.dirname(file);
  try {
    if (!statSync(teamsRoot).isDirectory()) throw new Error("not a directory");
    mkdirSync(dir, { mode: 0o700, recursive: true });
    chmodSync(dir, 0o700);
  } catch (error) {
    throw new HooksError("E_IO", `cannot create ${dir}: ${describeError(error)}`, { cause: error });
  }
  return file;
}

/** `600/min` or `server default`, for `keys list`. */
export function describeRate(rate: RateLimit | null): string {
  return rate ? formatRateLimit(rate) : "server default";
}
