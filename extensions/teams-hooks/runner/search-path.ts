/**
 * The PATH a gate, and every program the leader starts by name, is searched through: the absolute folders of
 * the PATH given, in their order. An empty or relative folder of PATH is searched from the working directory
 * of the process that looks the name up: a gate's is the project the agents write, where a file named `bash`
 * (the interpreter of a `.sh` gate) or `git` would run in place of the program the gate meant, and decide its
 * verdict (docs/security.md, "A gate's environment").
 */

/** What execvp searches without PATH (the C library's default), for a PATH with no absolute folder. */
export const DEFAULT_SEARCH_PATH = "/bin:/usr/bin";

/** `value`'s absolute folders, joined again; the C library's default when it has none. */
export function absoluteSearchPath(value: string): string {
  const folders = value.split(":").filter((folder) => folder.startsWith("/"));
  return folders.length > 0 ? folders.join(":") : DEFAULT_SEARCH_PATH;
}

/**
 * `env` with its PATH reduced to its absolute folders (absoluteSearchPath); `env` itself when there is
 * nothing to take out, or no PATH (execvp then searches the C library's default).
 */
export function withAbsoluteSearchPath<T extends Readonly<Record<string, string | undefined>>>(env: T): T {
  const value = env.PATH;
  if (value === undefined) return env;
  const searched = absoluteSearchPath(value);
  return searched === value ? env : { ...env, PATH: searched };
}
