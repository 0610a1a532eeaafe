/**
 * @module optional_import
 * Loads an optional peer dependency (a database driver, the OAuth client library) for the subpath
 * that needs it, so the core installs without them. A missing package becomes one error that names
 * it and how to install it.
 */

/** True when `error` says that `name` itself (not something it imports) could not be found. */
function isMissingPackage(error: unknown, name: string): boolean {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  // Node and Bun: ERR_MODULE_NOT_FOUND "Cannot find package 'x' imported from …";
  // Deno: "Could not find package 'x'…" / "Cannot find module 'x'" / npm resolution errors.
  const notFound =
    code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || /(cannot|could not) (find|resolve)/i.test(message)
  return notFound && (message.includes(`'${name}'`) || message.includes(`"${name}"`) || message.includes(name))
}

/**
 * Imports `name` through `load` (a literal `import('name')`, so bundlers see it), or throws an
 * `Error` naming the package and the subpath that needs it.
 *
 * @example
 * const { default: postgres } = await importOptional(() => import('postgres'), 'postgres', 'gatehouse-oidc/storage/postgres')
 */
export async function importOptional<T>(load: () => Promise<T>, name: string, subpath: string): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (!isMissingPackage(error, name)) throw error
    throw new Error(
      `${subpath} needs the package "${name}", which is not installed: npm install ${name} (Bun: bun add ${name}; Deno: deno add npm:${name})`,
      { cause: error },
    )
  }
}
