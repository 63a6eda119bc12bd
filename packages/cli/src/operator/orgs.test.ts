import { randomUUID } from 'node:crypto';
import { WorkspaceStore } from '@sluice/control';
import { describe, expect, it } from 'vitest';
import { runCli } from '../operator.js';
import { CliUsageError } from './command.js';
import { commands, createOrgsCommands } from './orgs.js';
import { controlTable } from '../../../../test/helpers/tables.js';

const workspaces = new WorkspaceStore(controlTable);

function orgsCommand(name: string): { run: (args: string[]) => Promise<void>; lines: string[] } {
  const lines: string[] = [];
  const command = createOrgsCommands({ out: (line) => lines.push(line) }).find((c) => c.name === name);
  if (!command) throw new Error(`no command ${name}`);
  return { run: (args) => command.run(args), lines };
}

async function newWorkspace(): Promise<string> {
  const id = `ws_${randomUUID()}`;
  await workspaces.ensureWorkspace(id);
  return id;
}

describe('orgs commands', () => {
  it('are exported under their names', () => {
    expect(commands.map((command) => command.name)).toEqual(['orgs link', 'orgs unlink', 'orgs list']);
  });

  it('link children, list them (also as JSON) and unlink one', async () => {
    // Prepare
    const [parent, a, b] = [await newWorkspace(), await newWorkspace(), await newWorkspace()];
    const link = orgsCommand('orgs link');
    const unlink = orgsCommand('orgs unlink');

    // Act
    await link.run(['--parent', parent, '--child', a]);
    await link.run(['--parent', parent, '--child', b]);
    const list = orgsCommand('orgs list');
    await list.run(['--workspace', parent]);
    await unlink.run(['--parent', parent, '--child', a]);
    const json = orgsCommand('orgs list');
    await json.run(['--workspace', parent, '--json']);
    const ofChild = orgsCommand('orgs list');
    await ofChild.run(['--workspace', b, '--json']);

    // Assess
    expect(link.lines[0]).toMatch(new RegExp(`^Linked workspace ${a} as a child of ${parent} at 20`));
    expect(list.lines).toHaveLength(2);
    expect(list.lines[0]).toMatch(new RegExp(`^${a}  linked 20`));
    expect(unlink.lines[0]).toMatch(new RegExp(`^Unlinked workspace ${a} from ${parent} at 20`));
    const printed = JSON.parse(json.lines[0] ?? '') as { children: { workspaceId: string }[] };
    expect(printed).toEqual({
      workspaceId: parent,
      parentId: null,
      children: [{ workspaceId: b, linkedAt: expect.stringMatching(/^20/) }],
    });
    expect(JSON.parse(ofChild.lines[0] ?? '')).toEqual({ workspaceId: b, parentId: parent, children: [] });
  });

  it('fails with the store’s message when a rule refuses the link, and for a missing workspace', async () => {
    const [parent, child, other] = [await newWorkspace(), await newWorkspace(), await newWorkspace()];
    await orgsCommand('orgs link').run(['--parent', parent, '--child', child]);
    const lines: string[] = [];
    const io = { out: (line: string) => lines.push(line), err: (line: string) => lines.push(line) };

    const second = await runCli(['orgs', 'link', '--parent', other, '--child', child], commands, io);
    const missing = await runCli(['orgs', 'link', '--parent', parent, '--child', 'ws_nope'], commands, io);
    const notChild = await runCli(['orgs', 'unlink', '--parent', other, '--child', child], commands, io);

    expect([second, missing, notChild]).toEqual([1, 1, 1]);
    expect(lines).toEqual([
      `Error: Workspace "${child}" is already a child of "${parent}"; unlink it from there first.`,
      'Error: Workspace "ws_nope" does not exist.',
      `Error: Workspace "${child}" is not a child of "${other}".`,
    ]);
  });

  it.each([
    ['orgs link', ['--child', 'b'], '--parent <ws> is required'],
    ['orgs link', ['--parent', 'a'], '--child <ws> is required'],
    ['orgs unlink', ['--parent', 'a#b', '--child', 'c'], '--parent must be'],
    ['orgs list', [], '--workspace <ws> is required'],
    ['orgs list', ['--workspace', 'a', 'extra'], 'Unexpected argument: extra'],
  ])('%s %j is a usage error', async (name, args, message) => {
    const command = createOrgsCommands({
      store: () => {
        throw new Error('must not be called');
      },
      out: () => {},
    }).find((c) => c.name === name);

    const failure = await command?.run(args).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(CliUsageError);
    expect((failure as Error).message).toContain(message);
  });
});
