import { ALL_CHILDREN, type InputIssue } from '@sluice/core';
import type { Caller } from '../ports.js';
import { invalidInput } from '../validation.js';
import type { UseCaseDeps } from './deps.js';

/** A child workspace as `GET /v1/organizations/children` lists it. */
export interface ChildOrganizationView {
  workspaceId: string;
  linkedAt: string;
}

/** The caller's workspace's current children, oldest link first (owners and admins: the route's access). */
export async function listChildOrganizations(
  deps: UseCaseDeps,
  caller: Caller,
): Promise<{ success: true; children: ChildOrganizationView[] }> {
  const links = await deps.store.listChildren(caller.workspaceId);
  return {
    success: true,
    children: links.map((link) => ({ workspaceId: link.childId, linkedAt: link.linkedAt })),
  };
}

/**
 * Refuses, with `400 invalid_input` at `childOrganizations[i]`, every id of a (well-formed) list that is not
 * a current child of the workspace. The message is the same whether that workspace exists or not, so it tells
 * nothing about other workspaces. `["*"]` and `[]` need no read.
 */
export async function assertCurrentChildren(
  deps: UseCaseDeps,
  workspaceId: string,
  childOrganizations: readonly string[],
): Promise<void> {
  if (childOrganizations.every((child) => child === ALL_CHILDREN)) return;
  const current = new Set((await deps.store.listChildren(workspaceId)).map((link) => link.childId));
  const issues: InputIssue[] = [];
  childOrganizations.forEach((child, index) => {
    if (child !== ALL_CHILDREN && !current.has(child)) {
      issues.push({
        path: `childOrganizations[${index}]`,
        message: `Workspace "${child}" is not a child organization of this workspace.`,
      });
    }
  });
  if (issues.length > 0) throw invalidInput(issues);
}
