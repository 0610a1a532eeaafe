/** `gatehouse clients remove ID`: deletes a client (in-memory store: from the configuration file). */
import { CliError, defineCommand } from '../args.ts'
import { editClients, fileClientIndex } from '../clients_file.ts'
import { progress } from '../io.ts'
import { requireFile, setup, withService } from '../setup.ts'

export const clientsRemove = defineCommand({
  name: 'clients remove',
  summary: 'delete a client',
  positionals: ['ID'],
  description: `Deletes the client. Running servers forget it within 5 seconds (their client cache). With the
in-memory store, the client is removed from the configuration file.`,
  flags: {},
  async run({ values, positionals: [id = ''] }) {
    const config = await setup(values)
    if (config.store.type === 'memory') {
      const { path } = requireFile(config)
      await editClients(config, { op: 'remove', index: fileClientIndex(config, id) })
      progress(`Removed client "${id}" from ${path}; restart the server to apply it`)
      return 0
    }
    return withService(config, async (service) => {
      if (!(await service.clients.delete(id))) throw new CliError(`client "${id}" does not exist`, 1)
      progress(`Removed client "${id}"`)
      if (config.file?.clients.some((client) => client.clientId === id)) {
        progress(`Note: ${config.configPath} still lists "${id}": the server registers it again when it starts`)
      }
      return 0
    })
  },
})
