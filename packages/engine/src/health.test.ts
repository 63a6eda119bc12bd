import { randomUUID } from 'node:crypto';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { ControlStore, CursorStore, LeaseStore, RunStateStore, RunStore } from '@sluice/control';
import { type Destination, type DestinationNotice, newDestination } from '@sluice/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BusLocal, type LocalBusEvent, startBusLocal } from '@sluice/devstack';
import { commitRun } from './commit.js';
import type { EngineDeps } from './deps.js';
import { recordFailure } from './failure.js';
import { failureReasonCode, healthAfter } from './health.js';
import {
  EventBridgeNoticePublisher,
  NOTICE_DETAIL_TYPES,
  NOTICE_SOURCE,
  type NoticePublisher,
} from './notices.js';
import { claimAndPlan } from './plan.js';
import { controlTable } from '../../../test/helpers/tables.js';

const workspaceId = `ws_${randomUUID()}`;
const controlStore = new ControlStore(controlTable);
const runState = new RunStateStore(controlTable);
const NOW = Date.parse('2026-11-20T10:00:00.000Z');
let bus: BusLocal;
let publisher: EventBridgeNoticePublisher;

beforeAll(async () => {
  bus = await startBusLocal();
  publisher = new EventBridgeNoticePublisher({
    eventBusName: 'health-test',
    client: new EventBridgeClient({
      endpoint: bus.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  });
});
afterAll(() => bus.stop());

function deps(notices: NoticePublisher = publisher, at = NOW): Partial<EngineDeps> {
  return {
    controlStore,
    runState,
    cursors: new CursorStore(controlTable),
    leases: new LeaseStore(controlTable),
    runs: new RunStore(controlTable),
    notices,
    now: () => new Date(at),
  };
}

async function createDestination(): Promise<Destination> {
  const id = `exp_${randomUUID().replaceAll('-', '')}`;
  return controlStore.createDestination({
    ...newDestination({
      workspaceId,
      id,
      name: 'Health test',
      provider: 's3',
      bucket: 'customer-bucket',
      region: 'us-east-1',
      endpoint: null,
      pathPrefix: '',
      accessKeyId: 'AKIAEXAMPLEEXAMPLE',
      secret: { encryptedDataKey: 'a2V5', iv: 'aXY=', ciphertext: 'Yw==', tag: 'dGFn' },
      datasets: ['email_events'],
      frequency: 'hourly',
      // Nothing to export: a run plans no window, so it commits as a success without a bucket.
      startFrom: new Date(NOW).toISOString(),
      now: new Date(NOW),
    }),
    status: 'idle',
    manualRunQueued: false,
  });
}

/** What Step Functions hands RecordFailure for an error the run-control or writer threw. */
function caught(name: string, message: string) {
  return { Error: name, Cause: JSON.stringify({ errorType: name, errorMessage: message }) };
}

function eventsOf(destination: Destination): LocalBusEvent[] {
  return bus
    .events()
    .filter((event) => (event.detail as { destinationId?: string }).destinationId === destination.id);
}

/** A whole run that succeeds: claim, nothing planned to write, commit. */
async function succeed(destination: Destination, notices: NoticePublisher = publisher): Promise<void> {
  const planned = await claimAndPlan(
    { workspaceId, destinationId: destination.id, trigger: 'manual', executionId: randomUUID() },
    deps(notices, NOW + 60_000),
  );
  if (planned.run === undefined) throw new Error(`not planned: ${planned.reason}`);
  const committed = await commitRun({ run: planned.run, results: [] }, deps(notices, NOW + 60_000));
  expect(committed.status).toBe('succeeded');
}

describe('destination failing and recovered notices, on DynamoDB Local and the local bus', () => {
  it('announces failing once per streak and recovered once, with the state in the destination', async () => {
    // Prepare
    const destination = await createDestination();
    const denied = caught(
      'BucketAccessDenied',
      'Access denied to bucket customer-bucket: grant s3:PutObject.',
    );

    // Act: a customer-caused failure of a healthy destination
    await recordFailure({ workspaceId, destinationId: destination.id, error: denied }, deps());

    // Assess: one failing event, and the state on the destination
    const [failing] = eventsOf(destination);
    expect(eventsOf(destination)).toHaveLength(1);
    expect(failing).toMatchObject({
      eventBusName: 'health-test',
      source: NOTICE_SOURCE,
      detailType: NOTICE_DETAIL_TYPES.failing,
      detail: {
        noticeId: `${destination.id}:failing:${new Date(NOW).toISOString()}`,
        state: 'failing',
        workspaceId,
        destinationId: destination.id,
        reason: 'access_denied',
        message: 'Access denied to bucket customer-bucket: grant s3:PutObject.',
        failingSince: new Date(NOW).toISOString(),
      },
    });
    const afterFirst = await controlStore.getDestination(workspaceId, destination.id);
    expect(afterFirst?.failing).toEqual({ since: new Date(NOW).toISOString(), reason: 'access_denied' });
    expect(afterFirst?.pendingNotice).toBeNull();

    // Act: a second customer-caused failure, then one of Sluice's own
    await recordFailure(
      { workspaceId, destinationId: destination.id, error: caught('BucketNotFound', 'No bucket.') },
      deps(publisher, NOW + 1000),
    );
    await recordFailure(
      { workspaceId, destinationId: destination.id, error: caught('DatabaseUnavailableError', 'Busy.') },
      deps(publisher, NOW + 2000),
    );

    // Assess: no new event; still failing since the first, with the latest customer reason
    expect(eventsOf(destination)).toHaveLength(1);
    const afterMore = await controlStore.getDestination(workspaceId, destination.id);
    expect(afterMore?.failing).toEqual({ since: new Date(NOW).toISOString(), reason: 'no_such_bucket' });
    expect(afterMore?.consecutiveFailures).toBe(3);

    // Act: a run succeeds
    await succeed(destination);

    // Assess: one recovered event, the state cleared
    const events = eventsOf(destination);
    expect(events.map((event) => event.detailType)).toEqual([
      NOTICE_DETAIL_TYPES.failing,
      NOTICE_DETAIL_TYPES.recovered,
    ]);
    expect(events[1]?.detail).toMatchObject({
      noticeId: `${destination.id}:recovered:${new Date(NOW).toISOString()}`,
      state: 'healthy',
      reason: 'no_such_bucket',
      message: null,
      failingSince: new Date(NOW).toISOString(),
    });
    const recovered = await controlStore.getDestination(workspaceId, destination.id);
    expect(recovered?.failing).toBeNull();
    expect(recovered?.pendingNotice).toBeNull();

    // Act: another success announces nothing
    await succeed(destination);

    // Assess
    expect(eventsOf(destination)).toHaveLength(2);
  });

  it('announces failing for a store whose answer no rule recognises (BucketUnknownError), a destination failure', async () => {
    // Prepare
    const destination = await createDestination();
    const odd = caught('BucketUnknownError', 'Writing to "customer-bucket" failed (HTTP 418): teapot');

    // Act
    await recordFailure({ workspaceId, destinationId: destination.id, error: odd }, deps());

    // Assess
    expect(
      eventsOf(destination).map((event) => [event.detailType, (event.detail as { reason?: string }).reason]),
    ).toEqual([[NOTICE_DETAIL_TYPES.failing, 'unknown']]);
    const read = await controlStore.getDestination(workspaceId, destination.id);
    expect(read?.failing).toEqual({ since: new Date(NOW).toISOString(), reason: 'unknown' });
  });

  it('decides the transition once, and publishes it once, when failures are recorded at the same moment', async () => {
    // Prepare: a bus that answers only once the other writers have finished (or a second notice is sent),
    // so the notice is in flight while they record theirs
    const destination = await createDestination();
    const denied = caught('BucketAccessDenied', 'Access denied.');
    let finished = 0;
    let publishing = 0;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const slow: NoticePublisher = {
      publish: async (notice) => {
        publishing += 1;
        if (publishing > 1) answer();
        await answered;
        await publisher.publish(notice);
      },
    };

    // Act
    await Promise.all(
      [0, 1, 2].map(() =>
        recordFailure({ workspaceId, destinationId: destination.id, error: denied }, deps(slow)).finally(
          () => {
            finished += 1;
            if (finished === 2) answer();
          },
        ),
      ),
    );

    // Assess
    expect(eventsOf(destination)).toHaveLength(1);
    const read = await controlStore.getDestination(workspaceId, destination.id);
    expect(read?.failing).toEqual({ since: new Date(NOW).toISOString(), reason: 'access_denied' });
    expect(read?.pendingNotice).toBeNull();
  });

  it('keeps a notice the bus refused pending, and publishes it (same id) with the next outcome', async () => {
    // Prepare
    const destination = await createDestination();
    const refusing: NoticePublisher = {
      publish: () => Promise.reject(new Error('EventBridge unavailable')),
    };
    const denied = caught('BucketAccessDenied', 'Access denied.');

    // Act: the failure is recorded, its notice not published
    const result = await recordFailure(
      { workspaceId, destinationId: destination.id, error: denied },
      deps(refusing),
    );

    // Assess
    expect(result.consecutiveFailures).toBe(1);
    expect(eventsOf(destination)).toHaveLength(0);
    const pending = (await controlStore.getDestination(workspaceId, destination.id))?.pendingNotice;
    expect(pending).toMatchObject({ kind: 'failing', reason: 'access_denied' });

    // Act: an outcome while the first publisher still holds the notice, then the retry after the backoff
    await recordFailure(
      { workspaceId, destinationId: destination.id, error: denied },
      deps(publisher, NOW + 1000),
    );
    const whileHeld = eventsOf(destination).length;
    await recordFailure(
      { workspaceId, destinationId: destination.id, error: denied },
      deps(publisher, NOW + 300_000),
    );

    // Assess: the pending notice went out once, under its id, and is no longer pending
    expect(whileHeld).toBe(0);
    expect(eventsOf(destination).map((event) => (event.detail as { noticeId: string }).noticeId)).toEqual([
      pending?.id,
    ]);
    expect((await controlStore.getDestination(workspaceId, destination.id))?.pendingNotice).toBeNull();
  });

  it('announces nothing when a failing notice never published is followed by a recovery', async () => {
    // Prepare
    const destination = await createDestination();
    const refusing: NoticePublisher = { publish: () => Promise.reject(new Error('down')) };
    await recordFailure(
      { workspaceId, destinationId: destination.id, error: caught('BucketWrongRegion', 'Wrong region.') },
      deps(refusing),
    );

    // Act
    await succeed(destination);

    // Assess
    expect(eventsOf(destination)).toHaveLength(0);
    const read = await controlStore.getDestination(workspaceId, destination.id);
    expect(read?.failing).toBeNull();
    expect(read?.pendingNotice).toBeNull();
  });
});

describe('healthAfter', () => {
  const healthy = { workspaceId: 'ws_1', id: 'exp_1', failing: null, pendingNotice: null };
  const now = new Date(NOW);

  it('leaves the state alone for Sluice-caused failures and for successes of a healthy destination', () => {
    // Assess
    for (const name of [
      'DatabaseUnavailableError',
      'KmsUnavailableError',
      'UnexpectedExportError',
      undefined,
    ]) {
      expect(healthAfter(healthy, { kind: 'failed', errorName: name, message: 'x' }, now)).toBeUndefined();
    }
    expect(healthAfter(healthy, { kind: 'succeeded' }, now)).toBeUndefined();
  });

  it('cancels a pending notice that a new transition reverses', () => {
    // Prepare
    const pending: DestinationNotice = {
      id: 'exp_1:failing:t',
      kind: 'failing',
      workspaceId: 'ws_1',
      destinationId: 'exp_1',
      reason: 'access_denied',
      message: 'x',
      failingSince: 't',
      occurredAt: 't',
    };

    // Act
    const changes = healthAfter(
      { ...healthy, failing: { since: 't', reason: 'access_denied' }, pendingNotice: pending },
      { kind: 'succeeded' },
      now,
    );

    // Assess
    expect(changes).toEqual({ failing: null, pendingNotice: null });
  });

  it('names the reason of every customer-caused error', () => {
    // Assess
    expect(failureReasonCode('BucketAccessDenied')).toBe('access_denied');
    expect(failureReasonCode('BucketWrongRegion')).toBe('wrong_region');
    expect(failureReasonCode('BucketUnreachable')).toBe('endpoint_unreachable');
    expect(failureReasonCode('SecretRejectedError')).toBe('secret_rejected');
    expect(failureReasonCode('DestinationConfigError')).toBe('invalid_location');
  });
});
