import { OrganizationStore } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../helpers/api-client.js';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
  uniqueId,
} from '../helpers/contract-harness.js';
import { requestMatchesSchema } from '../helpers/openapi.js';
import { controlTable } from '../helpers/tables.js';

/**
 * Parent organisations through the real HTTP API: the children a parent sees, `childOrganizations` on create
 * and update (only current children), and the isolation of a child from its parent's exports.
 */
const organizations = new OrganizationStore(controlTable);

let harness: ContractHarness;
let parent: TestWorkspace;
let childA: TestWorkspace;
let childB: TestWorkspace;
let stranger: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  [parent, childA, childB, stranger] = await Promise.all([
    harness.newWorkspace(),
    harness.newWorkspace(),
    harness.newWorkspace(),
    harness.newWorkspace(),
  ]);
  await organizations.link(parent.workspaceId, childA.workspaceId);
  await organizations.link(parent.workspaceId, childB.workspaceId);
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

describe('GET /organizations/children', () => {
  it("lists the caller's current children with when they were linked, under /api/v1 and /v1", async () => {
    const admin = await parent.clientWith({ role: 'admin' });

    const response = await parent.client.get('/organizations/children');
    const asAdmin = await admin.get('/organizations/children');
    const legacy = await new ApiClient(harness.url, parent.client.apiKey, '/v1').get(
      '/organizations/children',
    );

    expect(response.status).toBe(200);
    expect(response.body.children).toEqual([
      { workspaceId: childA.workspaceId, linkedAt: expect.stringMatching(/^20\d\d-/) },
      { workspaceId: childB.workspaceId, linkedAt: expect.stringMatching(/^20\d\d-/) },
    ]);
    expect(asAdmin.body.children).toEqual(response.body.children);
    expect(legacy.body.children).toEqual(response.body.children);
  });

  it('lists nothing for a child or a workspace without children', async () => {
    expect((await childA.client.get('/organizations/children')).body).toEqual({
      success: true,
      children: [],
    });
    expect((await stranger.client.get('/organizations/children')).body.children).toEqual([]);
  });

  it('refuses a member with the same 403 as every export route', async () => {
    const member = await parent.clientWith({ role: 'member' });

    const children = await member.get('/organizations/children');
    const exports = await member.get('/data-exports');

    expect(children.status).toBe(403);
    expect(children.body).toEqual(exports.body);
  });
});

describe('childOrganizations on create and update', () => {
  it('creates an export with chosen children, shows them on get and list; [] when none', async () => {
    const body = harness.createBody({ childOrganizations: [childA.workspaceId, childB.workspaceId] });

    const created = await parent.client.post('/data-exports', body);
    const plain = await parent.client.post('/data-exports', harness.createBody());

    expect(created.status).toBe(201);
    const id = created.body.dataExport!.id;
    expect(created.body.dataExport!.childOrganizations).toEqual([childA.workspaceId, childB.workspaceId]);
    expect((await parent.client.get(`/data-exports/${id}`)).body.dataExport!.childOrganizations).toEqual([
      childA.workspaceId,
      childB.workspaceId,
    ]);
    const listed = (await parent.client.get('/data-exports')).body.dataExports!;
    expect(listed.find((view) => view.id === id)?.childOrganizations).toHaveLength(2);
    expect(plain.body.dataExport!.childOrganizations).toEqual([]);
    const stored = await harness.store.getDestination(parent.workspaceId, id);
    const startFrom = created.body.dataExport!.startFrom;
    expect(stored?.childOrganizationsAddedAt).toEqual({
      [childA.workspaceId]: startFrom,
      [childB.workspaceId]: startFrom,
    });
  });

  it('takes ["*"] for every current and future child', async () => {
    const created = await parent.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: ['*'] }),
    );

    expect(created.status).toBe(201);
    expect(created.body.dataExport!.childOrganizations).toEqual(['*']);
  });

  it('refuses a workspace that is not a current child with 400 at its index, naming it, and saves nothing', async () => {
    const missing = uniqueId('ws_');
    const before = (await parent.client.get('/data-exports')).body.dataExports!.length;
    const cases = [[childA.workspaceId, stranger.workspaceId], [missing], [parent.workspaceId]];

    const responses = await Promise.all(
      cases.map((childOrganizations) =>
        parent.client.post('/data-exports', harness.createBody({ childOrganizations })),
      ),
    );

    const [strangerRefused, missingRefused, selfRefused] = responses;
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('invalid_input');
    }
    expect(strangerRefused!.body.issues).toEqual([
      {
        path: 'childOrganizations[1]',
        message: `Workspace "${stranger.workspaceId}" is not a child organization of this workspace.`,
      },
    ]);
    expect(strangerRefused!.body.error).toBe(
      `Workspace "${stranger.workspaceId}" is not a child organization of this workspace.`,
    );
    // A workspace that does not exist gets the same answer as one that is not a child.
    expect(missingRefused!.body.issues?.[0]).toEqual({
      path: 'childOrganizations[0]',
      message: `Workspace "${missing}" is not a child organization of this workspace.`,
    });
    expect(selfRefused!.body.issues?.[0]?.path).toBe('childOrganizations[0]');
    expect((await parent.client.get('/data-exports')).body.dataExports).toHaveLength(before);
  });

  it.each([
    [['*', 'x'], 'childOrganizations[0]', /"\*" \(every child\) cannot be listed/],
    [['a', 'a'], 'childOrganizations[1]', /listed twice/],
    [['a/b'], 'childOrganizations[0]', /is not a workspace id/],
  ])(
    'refuses %j with 400 at the index on create and update (the body matches the schema)',
    async (list, path, message) => {
      const existing = await parent.client.post('/data-exports', harness.createBody());
      const id = existing.body.dataExport!.id;

      const created = await parent.client.post(
        '/data-exports',
        harness.createBody({ childOrganizations: list }),
      );
      const updated = await parent.client.patch(`/data-exports/${id}`, { childOrganizations: list });

      for (const response of [created, updated]) {
        expect(response.status).toBe(400);
        expect(response.body.issues?.[0]?.path).toBe(path);
        expect(response.body.issues?.[0]?.message).toMatch(message);
      }
      expect(requestMatchesSchema('createDataExport', harness.createBody({ childOrganizations: list }))).toBe(
        true,
      );
    },
  );

  it('refuses a list of something else than workspace ids with 422', async () => {
    const response = await parent.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [7] }),
    );

    expect(response.status).toBe(422);
    expect(response.body.issues?.[0]?.path).toBe('childOrganizations[0]');
  });

  it('updates the list: a kept child keeps its time, an added one starts now, [] clears it', async () => {
    const created = await parent.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [childA.workspaceId] }),
    );
    const id = created.body.dataExport!.id;
    const startFrom = created.body.dataExport!.startFrom;
    const before = Date.now();

    const added = await parent.client.patch(`/data-exports/${id}`, {
      childOrganizations: [childA.workspaceId, childB.workspaceId],
    });
    const afterAdd = await harness.store.getDestination(parent.workspaceId, id);
    const refused = await parent.client.patch(`/data-exports/${id}`, {
      childOrganizations: [childA.workspaceId, stranger.workspaceId],
    });
    const cleared = await parent.client.patch(`/data-exports/${id}`, { childOrganizations: [] });
    const afterClear = await harness.store.getDestination(parent.workspaceId, id);

    expect(added.status).toBe(200);
    expect(added.body.dataExport!.childOrganizations).toEqual([childA.workspaceId, childB.workspaceId]);
    expect(afterAdd?.childOrganizationsAddedAt?.[childA.workspaceId]).toBe(startFrom);
    expect(
      Date.parse(afterAdd?.childOrganizationsAddedAt?.[childB.workspaceId] ?? ''),
    ).toBeGreaterThanOrEqual(before - 1000);
    expect(refused.status).toBe(400);
    expect(refused.body.issues?.[0]?.path).toBe('childOrganizations[1]');
    expect(cleared.body.dataExport!.childOrganizations).toEqual([]);
    expect(afterClear?.childOrganizations).toEqual([]);
    expect(afterClear?.childOrganizationsAddedAt).toEqual({});
    // Each removed entry is kept with its times (windows planned later still include it before the removal),
    // and never shown
    const clearedAt = afterClear?.childOrganizationsRemoved?.[0]?.removedAt ?? '';
    expect(afterClear?.childOrganizationsRemoved).toEqual([
      { entry: childA.workspaceId, addedAt: startFrom, removedAt: clearedAt },
      {
        entry: childB.workspaceId,
        addedAt: afterAdd?.childOrganizationsAddedAt?.[childB.workspaceId],
        removedAt: clearedAt,
      },
    ]);
    expect(Date.parse(clearedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(JSON.stringify(cleared.body)).not.toContain('childOrganizationsRemoved');
  });

  it('no longer takes a child once it is unlinked', async () => {
    const [owner, child] = await Promise.all([harness.newWorkspace(), harness.newWorkspace()]);
    await organizations.link(owner.workspaceId, child.workspaceId);
    const accepted = await owner.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [child.workspaceId] }),
    );
    await organizations.unlink(owner.workspaceId, child.workspaceId);

    const refused = await owner.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [child.workspaceId] }),
    );
    const listed = await owner.client.get('/organizations/children');

    expect(accepted.status).toBe(201);
    expect(refused.status).toBe(400);
    expect(refused.body.issues?.[0]?.path).toBe('childOrganizations[0]');
    expect(listed.body.children).toEqual([]);
  });
});

describe('a child and its parent stay isolated', () => {
  it("gives a child's key 404 on the parent's export and never lists it", async () => {
    const created = await parent.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [childA.workspaceId] }),
    );
    const id = created.body.dataExport!.id;

    const got = await childA.client.get(`/data-exports/${id}`);
    const runs = await childA.client.get(`/data-exports/${id}/runs`);
    const patched = await childA.client.patch(`/data-exports/${id}`, { name: 'Taken' });
    const deleted = await childA.client.delete(`/data-exports/${id}`);
    const listed = await childA.client.get('/data-exports');

    expect([got.status, runs.status, patched.status, deleted.status]).toEqual([404, 404, 404, 404]);
    expect(listed.body.dataExports!.map((view) => view.id)).not.toContain(id);
    expect((await parent.client.get(`/data-exports/${id}`)).body.dataExport!.name).toBe('Analytics lake');
  });

  it("does not let a child include its parent's data", async () => {
    const response = await childA.client.post(
      '/data-exports',
      harness.createBody({ childOrganizations: [parent.workspaceId] }),
    );

    expect(response.status).toBe(400);
    expect(response.body.issues?.[0]).toEqual({
      path: 'childOrganizations[0]',
      message: `Workspace "${parent.workspaceId}" is not a child organization of this workspace.`,
    });
  });
});
