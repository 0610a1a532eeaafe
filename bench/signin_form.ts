/**
 * The sign-in page's form as a browser submits it: its action and fields (the hidden ones, the
 * username, the password, the primary submit button). Used by the sign-in flow load
 * (bench/signin_load.ts) and by the workerd bench server, which signs its user in over HTTP before
 * it pre-creates codes (bench/servers/gatehouse_workers.ts). Works on Gatehouse's page and the peer's.
 */
const decode = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, entity: string) =>
    entity === 'amp' ? '&' : entity === 'lt' ? '<' : entity === 'gt' ? '>' : entity === 'quot' ? '"' : "'",
  )
const attribute = (tag: string, name: string) => {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag)
  return match ? decode(match[1] as string) : undefined
}

/** The sign-in form of a page: its action and the fields a browser would submit. */
export function signInForm(
  html: string,
  username: string,
  password: string,
): { action: string; fields: Record<string, string> } {
  const form = /<form[^>]*>/.exec(html)?.[0]
  const action = form ? attribute(form, 'action') : undefined
  if (!action) throw new Error(`no sign-in form in the page: ${html.slice(0, 200)}`)
  const fields: Record<string, string> = {}
  for (const tag of html.match(/<input[^>]*>/g) ?? []) {
    const name = attribute(tag, 'name')
    if (!name) continue
    const type = attribute(tag, 'type') ?? 'text'
    if (type === 'password') fields[name] = password
    else if (type === 'text' || type === 'email') fields[name] = username
    else if (type === 'hidden') fields[name] = attribute(tag, 'value') ?? ''
  }
  // The primary submit button (Gatehouse's carries decision=login; the peer's has no name).
  const button = (html.match(/<button[^>]*type="submit"[^>]*>/g) ?? [])[0]
  const buttonName = button && attribute(button, 'name')
  if (button && buttonName) fields[buttonName] = attribute(button, 'value') ?? ''
  return { action, fields }
}
