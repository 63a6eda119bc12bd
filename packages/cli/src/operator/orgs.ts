import { isKeySafeId, OrganizationStore } from '@sluice/control';
import type { ChildLink } from '@sluice/core';
import { loadRuntimeConfig } from '@sluice/local/runtime-config';
import { Command } from 'commander';
import { UsageError } from '../context.js';
import { commandGroup } from './command.js';
import { operatorTables } from './tables.js';

/** What the `orgs` commands need, injectable for tests. */
export interface OrgsCommandDeps {
  /** @default an `OrganizationStore` on the runtime configuration (read when the command runs) */
  store?: () => Pick<OrganizationStore, 'link' | 'unlink' | 'listChildren' | 'parentOf'>;
  /** @default a line on stdout */
  out?: (line: string) => void;
}

/** `--<option> <workspace id>`, required and usable as a key. */
function workspaceIdOption(option: string, value: string | undefined): string {
  if (value === undefined || value === '') throw new UsageError(`--${option} <ws> is required`);
  if (!isKeySafeId(value)) {
    throw new UsageError(`--${option} must be 1-200 characters without "#" or control characters`);
  }
  return value;
}

/** `--parent <ws> --child <ws>`, both required. */
function parentChild(values: { parent?: string; child?: string }): { parentId: string; childId: string } {
  return {
    parentId: workspaceIdOption('parent', values.parent),
    childId: workspaceIdOption('child', values.child),
  };
}

/** A command taking `--parent <ws> --child <ws>`. */
function parentChildCommand(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .option('--parent <ws>', 'the parent workspace')
    .option('--child <ws>', 'the child workspace');
}

/** One link as a line of `orgs list`: child, linked since. */
function childLine(link: ChildLink): string {
  return `${link.childId}  linked ${link.linkedAt}`;
}

/**
 * The `orgs` commands, on the control table directly (operators, not customers): the organisation hierarchy
 * (one level: a parent's children are never parents, a child has one parent at a time).
 *
 * `orgs link`: makes `--child` a child of `--parent`; both workspaces must exist (`keys create` makes one).
 * A parent's data exports may then include the child's data (`childOrganizations`).
 *
 * `orgs unlink`: ends the link; exports including the child stop including it. The link stays in the history
 * (backfills of a past range include the children linked then).
 *
 * `orgs list`: the workspace's current children and when each was linked, and its parent when it is a child
 * (with `--json`, `{"workspaceId", "parentId": <id|null>, "children": [{"workspaceId", "linkedAt"}]}`).
 */
export function createOrgsCommands(deps: OrgsCommandDeps = {}): Command[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const store = deps.store ?? (() => new OrganizationStore(operatorTables(loadRuntimeConfig()).control));
  const link = parentChildCommand('link', 'make --child a child of --parent').action(
    async (values: { parent?: string; child?: string }) => {
      const { parentId, childId } = parentChild(values);
      const linked = await store().link(parentId, childId);
      out(`Linked workspace ${childId} as a child of ${parentId} at ${linked.linkedAt}.`);
    },
  );

  const unlink = parentChildCommand('unlink', 'end the link of --child to --parent').action(
    async (values: { parent?: string; child?: string }) => {
      const { parentId, childId } = parentChild(values);
      const ended = await store().unlink(parentId, childId);
      out(
        `Unlinked workspace ${childId} from ${parentId} at ${ended.unlinkedAt} (linked ${ended.linkedAt}).`,
      );
      out("Exports of the parent stop including the child's data from their next window.");
    },
  );

  const list = new Command('list')
    .description("a workspace's children, and its parent")
    .option('--workspace <ws>', 'the workspace')
    .option('--json', 'print {"workspaceId", "parentId", "children": [...]}')
    .action(async (values: { workspace?: string; json?: boolean }) => {
      const workspaceId = workspaceIdOption('workspace', values.workspace);
      const organizations = store();
      const [parentId, children] = await Promise.all([
        organizations.parentOf(workspaceId),
        organizations.listChildren(workspaceId),
      ]);
      if (values.json) {
        const listed = children.map((child) => ({ workspaceId: child.childId, linkedAt: child.linkedAt }));
        out(JSON.stringify({ workspaceId, parentId, children: listed }));
        return;
      }
      if (parentId !== null) out(`Workspace ${workspaceId} is a child of ${parentId}.`);
      if (children.length === 0) {
        if (parentId === null) out(`Workspace ${workspaceId} has no children.`);
        return;
      }
      for (const child of children) out(childLine(child));
    });

  return [commandGroup('orgs', [link, unlink, list])];
}
