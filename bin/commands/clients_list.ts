/** `gatehouse clients list`: the clients and their secrets' ids and expiry, never a secret. */
import { defineCommand } from '../args.ts'
import { fileClientInfo } from '../clients_file.ts'
import { json, out, progress, table } from '../io.ts'
import { type SecretCell, secretsCell } from '../listing.ts'
import { requireFile, setup, withService } from '../setup.ts'

export const clientsList = defineCommand({
  name: 'clients list',
  summary: 'list the registered clients',
  description: `Lists the clients: id, type, name, permissions, and each secret's id and expiry (never the
secret). With the in-memory store, the configuration file's clients.`,
  flags: {
    json: { type: 'boolean', description: "the clients as JSON (the host API's ClientInfo)" },
  },
  async run({ values }) {
    const config = await setup(values)
    const clients =
      config.store.type === 'memory'
        ? requireFile(config).file.clients.map(fileClientInfo)
        : await withService(config, (service) => service.clients.list())
    clients.sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0))
    if (values.json) {
      json(clients)
      return 0
    }
    if (clients.length === 0) {
      progress('No clients.')
      return 0
    }
    out(
      table(
        ['ID', 'TYPE', 'NAME', 'PERMISSIONS', 'SECRETS'],
        clients.map((client) => [
          client.clientId,
          client.type,
          client.displayName,
          client.permissions.join(' '),
          secretsCell(client.secrets as SecretCell[]),
        ]),
      ),
    )
    return 0
  },
})
