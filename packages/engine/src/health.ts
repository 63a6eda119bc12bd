import { healthReadOf, type LeaseFence, type RunStateChanges, sameHealthRead } from '@sluice/control';
import type { Destination, DestinationFailing, DestinationNotice } from '@sluice/core';
import { BUCKET_ERROR_NAMES, type BucketErrorReason } from '@sluice/sinks';
import type { EngineDeps } from './deps.js';
import { failureCause } from './metrics.js';

/**
 * A destination's health as its customer sees it: `failing` while its runs fail for a reason only the
 * customer can fix (the engine's `Cause=destination`: access denied, a missing bucket, a wrong region, a
 * rejected secret, their store unreachable after the retries), healthy again once a run succeeds. Each
 * change is announced once on the event bus (`notices.ts`). Sluice's own failures (`Cause=sluice`) leave
 * the state as it is: they say nothing about the customer's side.
 */

/** What a recorded run outcome says about the destination's health. */
export type HealthOutcome =
  | { kind: 'failed'; errorName: string | undefined; message: string }
  | { kind: 'succeeded' };

/** The failing state and pending notice to write with an outcome; undefined fields stay as they are. */
export interface HealthChanges {
  failing: DestinationFailing | null;
  pendingNotice: DestinationNotice | null;
}

const BUCKET_REASONS = new Map<string, BucketErrorReason>(
  (Object.entries(BUCKET_ERROR_NAMES) as [BucketErrorReason, string][]).map(([reason, name]) => [
    name,
    reason,
  ]),
);

/**
 * The stable reason code of a customer-caused failure, from its error name: the bucket reasons of
 * `@sluice/sinks` (`access_denied`, `no_such_bucket`, `wrong_region`, `invalid_access_key`, …),
 * `secret_rejected` (the stored secret no longer decrypts) and `invalid_location`; `unknown` otherwise.
 */
export function failureReasonCode(errorName: string | undefined): string {
  if (errorName === undefined) return 'unknown';
  const bucket = BUCKET_REASONS.get(errorName);
  if (bucket !== undefined) return bucket;
  if (errorName === 'SecretRejectedError') return 'secret_rejected';
  if (errorName === 'DestinationConfigError') return 'invalid_location';
  return 'unknown';
}

/**
 * The health changes an outcome makes, or undefined when it makes none. Pure.
 * - A customer-caused failure of a healthy destination starts a failing streak with a `failing` notice; of
 *   a failing one, it only updates the reason.
 * - A success of a failing destination ends the streak with a `recovered` notice.
 * - A new notice that reverses one still pending (never published) cancels it instead: nobody was told of
 *   the first change, so there is nothing to take back.
 */
export function healthAfter(
  destination: Pick<Destination, 'workspaceId' | 'id' | 'failing' | 'pendingNotice'>,
  outcome: HealthOutcome,
  now: Date,
): HealthChanges | undefined {
  const failing = destination.failing ?? null;
  const pending = destination.pendingNotice ?? null;
  const notice = (kind: DestinationNotice['kind'], streak: DestinationFailing, message: string | null) =>
    pending !== null && pending.kind !== kind
      ? null
      : {
          id: `${destination.id}:${kind}:${streak.since}`,
          kind,
          workspaceId: destination.workspaceId,
          destinationId: destination.id,
          reason: streak.reason,
          message,
          failingSince: streak.since,
          occurredAt: now.toISOString(),
        };
  if (outcome.kind === 'succeeded') {
    if (failing === null) return undefined;
    return { failing: null, pendingNotice: notice('recovered', failing, null) };
  }
  if (failureCause(outcome.errorName) !== 'destination') return undefined;
  const reason = failureReasonCode(outcome.errorName);
  if (failing !== null) {
    return failing.reason === reason
      ? undefined
      : { failing: { ...failing, reason }, pendingNotice: pending };
  }
  const streak = { since: now.toISOString(), reason };
  return { failing: streak, pendingNotice: notice('failing', streak, outcome.message) };
}

/** How often an outcome is re-read and written again when another write moved the health in between. */
const HEALTH_ATTEMPTS = 3;

/**
 * How long the publisher of a pending notice holds it: another outcome recorded meanwhile leaves it to
 * the holder; one recorded later (a retried run comes minutes later) publishes it if it is still pending.
 */
export const NOTICE_CLAIM_MS = 60_000;

/**
 * Records a run's outcome on the destination together with the health change it makes, in one conditional
 * write (the run-state update, fenced as the caller says) that also requires the health to be as read: of
 * two writers, only the first moves it and decides its notice; the other re-reads and recomputes. Then
 * publishes the notice it recorded (held for {@link NOTICE_CLAIM_MS}), or one an earlier outcome left
 * pending, once it has taken it ({@link deliverPendingNotice}).
 *
 * @param changesFor the run-state changes of the outcome, from the destination as read
 * @returns the destination the recorded write was computed from, or undefined when nothing was recorded
 *   (the destination is gone, or the fence failed)
 */
export async function recordOutcomeWithHealth(
  destination: Destination,
  outcome: HealthOutcome,
  changesFor: (destination: Destination) => RunStateChanges,
  fence: LeaseFence,
  options: { releaseLease?: boolean },
  deps: Pick<EngineDeps, 'controlStore' | 'runState' | 'notices' | 'now'>,
): Promise<Destination | undefined> {
  const now = deps.now();
  let current: Destination | undefined = destination;
  for (let attempt = 0; attempt < HEALTH_ATTEMPTS && current !== undefined; attempt++) {
    const read = healthReadOf(current);
    const health = healthAfter(current, outcome, now);
    const created =
      health?.pendingNotice != null && health.pendingNotice.id !== current.pendingNotice?.id
        ? health.pendingNotice
        : undefined;
    const changes: RunStateChanges = {
      ...changesFor(current),
      ...(health ?? {}),
      ...(created ? { pendingNoticeClaimedUntilMs: now.getTime() + NOTICE_CLAIM_MS } : {}),
      expectedHealth: read,
    };
    const recorded = await deps.runState.update(
      current.workspaceId,
      current.id,
      changes,
      now,
      fence,
      options,
    );
    if (recorded) {
      // A notice this write recorded is ours to publish; one left pending by an earlier outcome is taken
      // first, so two outcomes never both publish it.
      const pending = health === undefined ? (current.pendingNotice ?? null) : health.pendingNotice;
      if (created !== undefined) await deliverPendingNotice(created, deps);
      else if (
        pending !== null &&
        (await deps.runState.claimPendingNotice(
          current.workspaceId,
          current.id,
          pending.id,
          now.getTime(),
          now.getTime() + NOTICE_CLAIM_MS,
        ))
      ) {
        await deliverPendingNotice(pending, deps);
      }
      return current;
    }
    const again = await deps.controlStore.getDestination(current.workspaceId, current.id);
    if (again === undefined || sameHealthRead(healthReadOf(again), read)) return undefined;
    current = again;
  }
  return undefined;
}

/**
 * Publishes a pending notice, then forgets it (only while it is still the pending one). A publish that
 * fails leaves it pending: the publisher reports the error (run-control logs it), and the next outcome
 * recorded for this destination publishes it again, with the same id, before anything newer. Never throws:
 * the outcome itself is recorded already.
 */
export async function deliverPendingNotice(
  notice: DestinationNotice,
  deps: Pick<EngineDeps, 'runState' | 'notices'>,
): Promise<boolean> {
  try {
    await deps.notices.publish(notice);
  } catch {
    return false;
  }
  try {
    await deps.runState.clearPendingNotice(notice.workspaceId, notice.destinationId, notice.id);
  } catch {
    // Published but still marked pending: the next outcome publishes it again, under the same id.
  }
  return true;
}
