import { parseArgs } from 'node:util';
import { isKeySafeId, OrganizationStore } from '@sluice/control';
import type { ChildLink } from '@sluice/core';
import { readCliTables } from '@sluice/local/runtime-config';
import { type CliCommand, CliUsageError } from './command.js';

/** What the `orgs` commands need, injectable for tests. */
export interface OrgsCommandDeps {
  /** @default an `OrganizationStore` on the environment the dispatcher set (created when the command runs) */
  store?: () => Pick<OrganizationStore, 'link' | 'unlink' | 'listChildren' | 'parentOf'>;
  /** @default a line on stdout */
  out?: (line: string) => void;
}

const LINK_USAGE = 'orgs link --parent <ws> --child <ws>';
const UNLINK_USAGE = 'orgs unlink --parent <ws> --child <ws>';
const LIST_USAGE = 'orgs list --workspace <ws> [--json]';

/** `--<option> <workspace id>`, required and usable as a key. */
function workspaceIdOption(option: string, value: string | undefined): string {
  if (value === undefined || value === '') throw new CliUsageError(`--${option} <ws> is required`);
  if (!isKeySafeId(value)) {
    throw new CliUsageError(`--${option} must be 1-200 characters without "#" or control characters`);
  }
  return value;
}

/** Parses `--parent <ws> --child <ws>` and nothing else. */
function parseParentChild(args: string[]): { parentId: string; childId: string } {
  const { values, positionals } = parseArgs({
    args,
    options: { parent: { type: 'string' }, child: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new CliUsageError(`Unexpected argument: ${positionals.join(' ')}`);
  return {
    parentId: workspaceIdOption('parent', values.parent),
    childId: workspaceIdOption('child', values.child),
  };
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
export function createOrgsCommands(deps: OrgsCommandDeps = {}): CliCommand[] {
  const out = deps.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const store = deps.store ?? (() => new OrganizationStore(readCliTables().control));
  return [
    {
      name: 'orgs link',
      usage: LINK_USAGE,
      async run(args: string[]): Promise<void> {
        const { parentId, childId } = parseParentChild(args);
        const link = await store().link(parentId, childId);
        out(`Linked workspace ${childId} as a child of ${parentId} at ${link.linkedAt}.`);
      },
    },
    {
      name: 'orgs unlink',
      usage: UNLINK_USAGE,
      async run(args: string[]): Promise<void> {
        const { parentId, childId } = parseParentChild(args);
        const link = await store().unlink(parentId, childId);
        out(
          `Unlinked workspace ${childId} from ${parentId} at ${link.unlinkedAt} (linked ${link.linkedAt}).`,
        );
        out("Exports of the parent stop including the child's data from their next window.");
      },
    },
    {
      name: 'orgs list',
      usage: LIST_USAGE,
      async run(args: string[]): Promise<void> {
        const { values, positionals } = parseArgs({
          args,
          options: { workspace: { type: 'string' }, json: { type: 'boolean', default: false } },
          allowPositionals: true,
          strict: true,
        });
        if (positionals.length > 0) throw new CliUsageError(`Unexpected argument: ${positionals.join(' ')}`);
        const workspaceId = workspaceIdOption('workspace', values.workspace);
        const organizations = store();
        const [parentId, children] = await Promise.all([
          organizations.parentOf(workspaceId),
          organizations.listChildren(workspaceId),
        ]);
        if (values.json) {
          const listed = children.map((link) => ({ workspaceId: link.childId, linkedAt: link.linkedAt }));
          out(JSON.stringify({ workspaceId, parentId, children: listed }));
          return;
        }
        if (parentId !== null) out(`Workspace ${workspaceId} is a child of ${parentId}.`);
        if (children.length === 0) {
          if (parentId === null) out(`Workspace ${workspaceId} has no children.`);
          return;
        }
        for (const link of children) out(childLine(link));
      },
    },
  ];
}

/** The `orgs` commands of the `npm run sluice` CLI. */
export const commands: CliCommand[] = createOrgsCommands();
