import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, type DataExportRun, runSk, runsPk } from '@sluice/control';

const db = createDocumentClient();

/**
 * Writes (or overwrites) a run record as the engine stores it, for tests of the run history without an
 * engine: a finished, manual run with no rows unless `run` says otherwise. `startedAt` defaults to now.
 */
export async function putRunRecord(
  workspaceId: string,
  destinationId: string,
  run: Partial<DataExportRun> & Pick<DataExportRun, 'id'>,
): Promise<void> {
  const startedAt = run.startedAt ?? new Date().toISOString();
  await db.send(
    new PutCommand({
      TableName: process.env.SLUICE_CONTROL_TABLE,
      Item: {
        PK: runsPk(workspaceId, destinationId),
        SK: runSk(startedAt, run.id),
        destinationId,
        workspaceId,
        status: 'succeeded',
        isManual: true,
        rowCount: 0,
        fileCount: 0,
        byteCount: 0,
        stats: {},
        error: null,
        finishedAt: startedAt,
        expiresAt: Math.floor(Date.now() / 1000) + 86_400,
        ...run,
        startedAt,
      },
    }),
  );
}
