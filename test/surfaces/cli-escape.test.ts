import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '@sluice/control';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ContractHarness,
  startContractHarness,
  type TestWorkspace,
} from '../helpers/contract-harness.js';
import { controlTable } from '../helpers/tables.js';
import { sluice } from './cli-context.js';

let harness: ContractHarness;
let ws: TestWorkspace;

beforeAll(async () => {
  harness = await startContractHarness();
  ws = await harness.newWorkspace();
});

afterAll(async () => {
  expect(await harness.closeAndFindLeaks()).toEqual([]);
});

/** What no line the CLI prints may hold raw: C0, DEL, C1 and the bidirectional controls. */
const UNSAFE = /[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

describe('sluice data-exports prints API data escaped (issue 28)', () => {
  it('escapes control and bidirectional characters of a stored name in list, get and --json', async () => {
    // Prepare: a name stored before the API refused such names (written to the table directly).
    const created = await ws.client.post('/data-exports', harness.createBody({ name: 'Legacy' }));
    const id = created.body.dataExport!.id as string;
    const forged = 'Lake\u001b]0;pwned\u0007\r\nexp_forged  Fake  active\u202Etxt.exe\u009b31m';
    await documentClient.send(
      new UpdateCommand({
        TableName: controlTable.tableName,
        Key: { PK: `WS#${ws.workspaceId}`, SK: `DEST#${id}` },
        UpdateExpression: 'SET #name = :name',
        ExpressionAttributeNames: { '#name': 'name' },
        ExpressionAttributeValues: { ':name': forged },
      }),
    );
    const common = ['--api-url', `${harness.url}/api/v1`, '--api-key', ws.client.apiKey!];

    // Act
    const list = await sluice(['data-exports', 'list', ...common]);
    const get = await sluice(['data-exports', 'get', id, ...common]);
    const json = await sluice(['data-exports', 'get', id, '--json', ...common]);

    // Assess: one line per export, nothing raw, the characters shown as \uXXXX
    expect([list.code, get.code, json.code]).toEqual([0, 0, 0]);
    for (const printed of [list.out, get.out, json.out]) {
      for (const line of printed.split('\n')) expect(line).not.toMatch(UNSAFE);
    }
    expect(list.out.split('\n')).toHaveLength(2);
    expect(list.out).toContain(
      'Lake\\u001b]0;pwned\\u0007\\u000d\\u000aexp_forged  Fake  active\\u202etxt.exe\\u009b31m',
    );
    expect(get.out).toContain('\\u202e');
    expect(JSON.parse(json.out).dataExport.name).toBe(forged);
  });
});
