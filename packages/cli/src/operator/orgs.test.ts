import { randomUUID } from 'node:crypto';
import { WorkspaceStore } from '@sluice/control';
import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { CommanderError } from 'commander';
import { UsageError } from '../context.js';
import { runSluice } from '../program.js';
import { runCommands } from './command.js';
import { createOrgsCommands } from './orgs.js';
import { controlTable } from '../../../../test/helpers/tables.js';

const workspaces = new WorkspaceStore(controlTable);

function orgsCommand(name: string): { run: (args: string[]) => Promise<void>; lines: string[] } {
  const lines: string[] = [];
  const commands = createOrgsCommands({ out: (line) => lines.push(line) });
  return { run: (args) => runCommands(commands, [...name.split(' '), ...args]), lines };
}

async function newWorkspace(): Promise<string> {
  const id = `ws_${randomUUID()}`;
  await workspaces.ensureWorkspace(id);
  return id;
}

describe('orgs commands', () => {
  it('are exported under their names', () => {
    const [orgs] = createOrgsCommands();
    expect(orgs?.name()).toBe('orgs');
    expect(orgs?.commands.map((command) => command.name())).toEqual(['link', 'unlink', 'list']);
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
    const context = {
      out: (line: string) => lines.push(line),
      err: (line: string) => lines.push(line),
      env: {},
      stdin: Readable.from([]),
    };
    const sluice = (argv: string[]) => runSluice(argv, context, async () => createOrgsCommands(context));

    const second = await sluice(['orgs', 'link', '--parent', other, '--child', child]);
    const missing = await sluice(['orgs', 'link', '--parent', parent, '--child', 'ws_nope']);
    const notChild = await sluice(['orgs', 'unlink', '--parent', other, '--child', child]);

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
    ['orgs list', ['--workspace', 'a', 'extra'], 'too many arguments'],
  ])('%s %j is a usage error', async (name, args, message) => {
    const commands = createOrgsCommands({
      store: () => {
        throw new Error('must not be called');
      },
      out: () => {},
    });

    const failure = await runCommands(commands, [...name.split(' '), ...args]).catch(
      (error: unknown) => error,
    );

    // Ours, or commander's refusal of the invocation: exit code 2 either way.
    expect(failure instanceof UsageError || failure instanceof CommanderError).toBe(true);
    expect((failure as Error).message).toContain(message);
  });
});
