import { randomUUID } from 'node:crypto';
import { ConflictError, InvalidInputError, MAX_CHILD_ORGANIZATIONS, NotFoundError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { controlTable } from '../../../test/helpers/tables.js';
import { OrganizationStore } from './organizations.js';
import { WorkspaceStore } from './workspaces.js';

const organizations = new OrganizationStore(controlTable);
const workspaces = new WorkspaceStore(controlTable);

const T0 = new Date('2026-03-01T10:00:00.000Z');
const T1 = new Date('2026-03-02T10:00:00.000Z');
const T2 = new Date('2026-03-03T10:00:00.000Z');

/** New workspaces with unique ids. */
async function newWorkspaces(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `org-${i}-${randomUUID()}`);
  await Promise.all(ids.map((id) => workspaces.ensureWorkspace(id)));
  return ids;
}

describe('OrganizationStore (DynamoDB Local)', () => {
  it('links children, lists the current ones oldest first and names a child’s parent', async () => {
    const [parent, a, b] = (await newWorkspaces(3)) as [string, string, string];

    const linkA = await organizations.link(parent, a, T0);
    await organizations.link(parent, b, T1);

    expect(linkA).toEqual({ parentId: parent, childId: a, linkedAt: T0.toISOString(), unlinkedAt: null });
    expect(await organizations.listChildren(parent)).toEqual([
      { parentId: parent, childId: a, linkedAt: T0.toISOString(), unlinkedAt: null },
      { parentId: parent, childId: b, linkedAt: T1.toISOString(), unlinkedAt: null },
    ]);
    expect(await organizations.parentOf(a)).toBe(parent);
    expect(await organizations.parentOf(parent)).toBeNull();
    expect(await organizations.listChildren(a)).toEqual([]);
  });

  it('keeps the history: an unlink ends the link, linking again makes a new one', async () => {
    const [parent, child] = (await newWorkspaces(2)) as [string, string];
    await organizations.link(parent, child, T0);

    const ended = await organizations.unlink(parent, child, T1);
    const afterUnlink = await organizations.listChildren(parent);
    const relinked = await organizations.link(parent, child, T2);

    expect(ended).toEqual({
      parentId: parent,
      childId: child,
      linkedAt: T0.toISOString(),
      unlinkedAt: T1.toISOString(),
    });
    expect(afterUnlink).toEqual([]);
    expect(relinked.linkedAt).toBe(T2.toISOString());
    expect(await organizations.listChildren(parent)).toEqual([relinked]);
    expect(await organizations.listChildren(parent, { includeUnlinked: true })).toEqual([ended, relinked]);
    expect(await organizations.parentOf(child)).toBe(parent);
  });

  it('links, unlinks and links again at the same instant as separate links', async () => {
    const [parent, child] = (await newWorkspaces(2)) as [string, string];
    await organizations.link(parent, child, T0);
    await organizations.unlink(parent, child, T0);
    await organizations.link(parent, child, T0);

    expect(await organizations.listChildren(parent, { includeUnlinked: true })).toHaveLength(2);
    expect(await organizations.listChildren(parent)).toHaveLength(1);
  });

  it('refuses a self-link, a missing workspace and a second link of the same child', async () => {
    const [parent, child] = (await newWorkspaces(2)) as [string, string];
    const missing = `missing-${randomUUID()}`;
    await organizations.link(parent, child, T0);

    await expect(organizations.link(parent, parent)).rejects.toThrow(InvalidInputError);
    await expect(organizations.link(missing, child)).rejects.toThrow(
      new NotFoundError(`Workspace "${missing}" does not exist.`),
    );
    await expect(organizations.link(parent, missing)).rejects.toThrow(
      new NotFoundError(`Workspace "${missing}" does not exist.`),
    );
    await expect(organizations.link(parent, 'bad#id')).rejects.toThrow(NotFoundError);
    await expect(organizations.link(parent, child)).rejects.toThrow(
      `Workspace "${child}" is already a child of "${parent}".`,
    );
    expect(await organizations.listChildren(parent, { includeUnlinked: true })).toHaveLength(1);
  });

  it('keeps one level: a child cannot have children, a parent cannot become a child', async () => {
    const [parent, child, grandchild, other] = (await newWorkspaces(4)) as [string, string, string, string];
    await organizations.link(parent, child, T0);

    await expect(organizations.link(child, grandchild)).rejects.toThrow(
      new ConflictError(
        `Workspace "${child}" is a child of "${parent}", so it cannot have children (one level only).`,
        'conflict',
      ),
    );
    await expect(organizations.link(other, parent)).rejects.toThrow(
      `Workspace "${parent}" has children, so it cannot become a child (one level only).`,
    );
    await expect(organizations.link(other, child)).rejects.toThrow(
      `Workspace "${child}" is already a child of "${parent}"; unlink it from there first.`,
    );
    expect(await organizations.listChildren(child)).toEqual([]);
    expect(await organizations.parentOf(parent)).toBeNull();
    expect(await organizations.listChildren(other)).toEqual([]);

    // Once its children are unlinked, a former parent may become a child.
    await organizations.unlink(parent, child, T1);
    await organizations.link(other, parent, T2);
    expect(await organizations.parentOf(parent)).toBe(other);
  });

  it(`refuses a child beyond ${MAX_CHILD_ORGANIZATIONS}, naming the limit; an unlink makes room`, async () => {
    // Prepare: a parent with the most children a workspace may have
    const [parent, ...children] = await newWorkspaces(MAX_CHILD_ORGANIZATIONS + 2);
    const [extra, ...linked] = children as [string, ...string[]];
    for (const child of linked.slice(0, MAX_CHILD_ORGANIZATIONS))
      await organizations.link(parent as string, child, T0);

    // Act + Assess: one more is refused, as a conflict naming the limit; after an unlink it is linked
    await expect(organizations.link(parent as string, extra)).rejects.toThrow(
      new ConflictError(
        `Workspace "${parent}" already has ${MAX_CHILD_ORGANIZATIONS} children, the most a workspace may have; unlink one first.`,
        'conflict',
      ),
    );
    expect(await organizations.parentOf(extra)).toBeNull();
    await organizations.unlink(parent as string, linked[0] as string, T1);
    await organizations.link(parent as string, extra, T2);
    expect(await organizations.listChildren(parent as string)).toHaveLength(MAX_CHILD_ORGANIZATIONS);
  }, 300_000);

  it('refuses to unlink what is not a current child', async () => {
    const [parent, child, other] = (await newWorkspaces(3)) as [string, string, string];
    await organizations.link(parent, child, T0);

    await expect(organizations.unlink(other, child)).rejects.toThrow(
      new NotFoundError(`Workspace "${child}" is not a child of "${other}".`),
    );
    await organizations.unlink(parent, child, T1);
    await expect(organizations.unlink(parent, child)).rejects.toThrow(NotFoundError);
    expect(await organizations.listChildren(parent, { includeUnlinked: true })).toHaveLength(1);
  });

  it('links one child to two parents at the same time: exactly one wins', async () => {
    for (let round = 0; round < 5; round++) {
      const [first, second, child] = (await newWorkspaces(3)) as [string, string, string];

      const outcomes = await Promise.allSettled([
        organizations.link(first, child, T0),
        organizations.link(second, child, T0),
      ]);

      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      const winner = (won[0] as PromiseFulfilledResult<{ parentId: string }>).value.parentId;
      expect(await organizations.parentOf(child)).toBe(winner);
      const children = await Promise.all([
        organizations.listChildren(first),
        organizations.listChildren(second),
      ]);
      expect(children.flat().map((link) => link.parentId)).toEqual([winner]);
    }
  });

  it('links A under B and B under C at the same time: never two levels', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b, c] = (await newWorkspaces(3)) as [string, string, string];

      await Promise.allSettled([organizations.link(b, a, T0), organizations.link(c, b, T0)]);

      const bIsParent = (await organizations.listChildren(b)).length > 0;
      const bIsChild = (await organizations.parentOf(b)) !== null;
      expect(bIsParent && bIsChild).toBe(false);
      expect(bIsParent || bIsChild).toBe(true);
    }
  });
});
