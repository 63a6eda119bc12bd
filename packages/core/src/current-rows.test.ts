import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  applyMessageInput,
  type CurrentRow,
  decideProject,
  emissionId,
  type ParseCurrentRow,
} from './current-rows.js';
import { describeIssues, timestamp } from './rows.js';

/** A small stand-in for the dataset's schema: required fields, normalization, unknown fields dropped. */
const schema = z.object({
  message_id: z.string().min(1),
  status: z.enum(['queued', 'sent', 'delivered', 'failed']),
  to_phone_number: z.string().transform((v) => (v.startsWith('+') ? v : `+1${v}`)),
  url_click_count: z
    .number()
    .int()
    .nullish()
    .transform((v) => v ?? null),
  created_at: timestamp,
  updated_at: timestamp.nullish().transform((v) => v ?? null),
});
const parse: ParseCurrentRow = (input) => {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, row: result.data }
    : { ok: false, reason: describeIssues(result.error.issues) };
};

const whole = {
  dataset: 'message_events',
  message_id: 'm1',
  status: 'queued',
  to_phone_number: '5555550123',
  created_at: '2026-09-26T08:00:00Z',
  updated_at: '2026-09-26T08:00:00Z',
};
const created = (applyMessageInput(undefined, whole, parse) as { row: CurrentRow }).row;

describe('applyMessageInput', () => {
  it('creates a new message from a whole row, normalized, and emits it', () => {
    const decision = applyMessageInput(undefined, whole, parse);
    expect(decision).toEqual({
      kind: 'created',
      emit: true,
      row: {
        message_id: 'm1',
        status: 'queued',
        to_phone_number: '+15555550123',
        url_click_count: null,
        created_at: '2026-09-26T08:00:00.000Z',
        updated_at: '2026-09-26T08:00:00.000Z',
      },
    });
  });

  it('refuses a change for an unknown message_id, saying why', () => {
    const decision = applyMessageInput(
      undefined,
      { message_id: 'm9', status: 'delivered', updated_at: '2026-09-26T09:00:00Z' },
      parse,
    );
    expect(decision.kind).toBe('refused');
    expect((decision as { reason: string }).reason).toMatch(
      /message_id: no message with this id was received/,
    );
    expect((decision as { reason: string }).reason).toContain('to_phone_number');
  });

  it('merges a newer status change into the current row and emits the whole row', () => {
    const decision = applyMessageInput(
      created,
      { message_id: 'm1', status: 'delivered', updated_at: '2026-09-27T07:00:00Z' },
      parse,
    );
    expect(decision).toEqual({
      kind: 'changed',
      emit: true,
      row: { ...created, status: 'delivered', updated_at: '2026-09-27T07:00:00.000Z' },
    });
  });

  it('keeps a change of other fields only, without emitting it', () => {
    const decision = applyMessageInput(
      created,
      { message_id: 'm1', url_click_count: 2, updated_at: '2026-09-26T08:05:00Z' },
      parse,
    );
    expect(decision).toEqual({
      kind: 'changed',
      emit: false,
      row: { ...created, url_click_count: 2, updated_at: '2026-09-26T08:05:00.000Z' },
    });
  });

  it('ignores a change with an equal or older updated_at', () => {
    for (const updatedAt of [
      '2026-09-26T08:00:00Z',
      '2026-09-26T07:59:59.999Z',
      Date.parse(whole.updated_at),
    ]) {
      expect(
        applyMessageInput(created, { message_id: 'm1', status: 'failed', updated_at: updatedAt }, parse),
      ).toEqual({ kind: 'out_of_order' });
    }
  });

  it('takes any timed change after a row that had no updated_at', () => {
    const untimed = { ...created, updated_at: null };
    const decision = applyMessageInput(
      untimed,
      { message_id: 'm1', status: 'sent', updated_at: '2020-01-01T00:00:00Z' },
      parse,
    );
    expect(decision).toMatchObject({ kind: 'changed', emit: true });
  });

  it('refuses a change without updated_at, or with an invalid one, or one the schema refuses', () => {
    expect(applyMessageInput(created, { message_id: 'm1', status: 'sent' }, parse)).toEqual({
      kind: 'refused',
      reason: 'updated_at: required on a change to a message',
    });
    expect(
      applyMessageInput(created, { message_id: 'm1', status: 'sent', updated_at: 'soon' }, parse),
    ).toMatchObject({
      kind: 'refused',
      reason: expect.stringMatching(/^updated_at:/),
    });
    expect(
      applyMessageInput(
        created,
        { message_id: 'm1', status: 'lost', updated_at: '2026-09-27T00:00:00Z' },
        parse,
      ),
    ).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/^status:/) });
  });

  it('never changes the message_id, and ignores envelope fields', () => {
    const decision = applyMessageInput(
      created,
      { message_id: 'm1', status: 'sent', updated_at: '2026-09-26T08:01:00Z', recorded_at: 5, dataset: 'x' },
      parse,
    );
    expect(decision).toMatchObject({ kind: 'changed', row: { message_id: 'm1', status: 'sent' } });
    expect(Object.keys((decision as { row: CurrentRow }).row)).not.toContain('recorded_at');
  });
});

describe('decideProject', () => {
  it('emits a project once, when it is first received complete', () => {
    expect(decideProject({ completed_at: '2026-09-26T08:00:00.000Z' }, false)).toEqual({ kind: 'completed' });
    expect(decideProject({ completed_at: null }, false)).toEqual({ kind: 'not_complete' });
    expect(decideProject({}, false)).toEqual({ kind: 'not_complete' });
    expect(decideProject({ completed_at: '2026-09-26T08:00:00.000Z' }, true)).toEqual({
      kind: 'after_completion',
    });
  });
});

describe('emissionId', () => {
  it('sorts the emissions of one message by updated_at', () => {
    const a = emissionId('m1', { updated_at: '2026-09-26T08:00:00.000Z' });
    const b = emissionId('m1', { updated_at: '2026-09-26T09:00:00.000Z' });
    expect(a).toBe(`m1@${String(Date.parse('2026-09-26T08:00:00Z')).padStart(13, '0')}`);
    expect(a < b).toBe(true);
    expect(emissionId('m1', { updated_at: null })).toBe('m1@-');
  });
});
