/**
 * Who an erasure removes, and which rows are theirs: one rule for the event log, the archive and the ingest
 * dead-letter queue (docs/internals.md, "Erasure").
 *
 * A person is a set of subscriber ids and a set of e-mail addresses (compared in lower case). A row of an event
 * dataset is the person's when its `subscriber_id` is one of the ids, or when an e-mail address it carries is
 * one of the addresses: `email` (email events) or `properties.email` (custom events), whatever its
 * `subscriber_id` (a row without one, or an address the person shares with an older subscriber id). A
 * subscriber row (`id`, `email`) is the person's by its `id` or its `email`.
 *
 * The second product's rows identify a person by phone number and `contact_id` (the catalogue's erasure keys,
 * `ERASURE_FIELDS`): a row is the person's when a phone field holds one of the person's numbers (compared in
 * E.164) or its `contact_id` is one of theirs. What a row teaches (`learnFrom`) is only the contact's side: a
 * message's recipient when outbound, its sender when inbound, never the organization's own sender number. A
 * subscriber row is also the person's by its `phone` (as the producer spelt it, read in E.164; a value that is
 * not a phone number never matches), so an erasure by phone number reaches the subscribers snapshot.
 */
import { createHash } from 'node:crypto';
import { ERASURE_FIELDS, normalizePhone } from './catalog/index.js';

/** A person an erasure removes (plain identifiers, or their hashes in the erasure log). */
export interface ErasedPerson {
  hasSubscriberId(subscriberId: string): boolean;
  /** `email` is compared in lower case; pass it as the row has it. */
  hasEmail(email: string): boolean;
  /** `phone` is compared in E.164; pass it as the row has it. */
  hasPhone(phone: string): boolean;
  hasContactId(contactId: string): boolean;
}

/** A phone number as erasure compares it: E.164 (short codes as they are), else the text without spaces. */
export function erasurePhone(phone: string): string {
  return normalizePhone(phone, true) ?? phone.replace(/\s/g, '');
}

/** The phone numbers of the person a row is about (never the organization's sender): see the module. */
export function contactPhonesOfRow(row: Readonly<Record<string, unknown>>): string[] {
  const phones: string[] = [];
  if (typeof row.phone_number === 'string') phones.push(row.phone_number);
  const side =
    row.direction === 'inbound'
      ? row.from_phone_number
      : row.direction === 'outbound'
        ? row.to_phone_number
        : undefined;
  if (typeof side === 'string') phones.push(side);
  return phones;
}

/** The e-mail addresses an event row carries, as written: `email`, and `properties.email`. */
export function emailsOfRow(row: Readonly<Record<string, unknown>>): string[] {
  const emails: string[] = [];
  if (typeof row.email === 'string') emails.push(row.email);
  const properties = row.properties;
  if (typeof properties === 'object' && properties !== null && !Array.isArray(properties)) {
    const email = (properties as Record<string, unknown>).email;
    if (typeof email === 'string') emails.push(email);
  }
  return emails;
}

/** True when an event row (parsed, or a producer's input) belongs to `person`. */
export function eventRowBelongsTo(row: Readonly<Record<string, unknown>>, person: ErasedPerson): boolean {
  if (typeof row.subscriber_id === 'string' && person.hasSubscriberId(row.subscriber_id)) return true;
  if (emailsOfRow(row).some((email) => person.hasEmail(email))) return true;
  for (const field of ERASURE_FIELDS.phone) {
    const value = row[field];
    if (typeof value === 'string' && person.hasPhone(value)) return true;
  }
  for (const field of ERASURE_FIELDS.contactId) {
    const value = row[field];
    if (typeof value === 'string' && person.hasContactId(value)) return true;
  }
  return false;
}

/**
 * A subscriber's phone number in E.164, or undefined when `phone` is not a person's number (no value, text like
 * `n/a`, a short code): such a value never links two subscribers.
 */
export function subscriberPhoneOf(row: Readonly<Record<string, unknown>>): string | undefined {
  return typeof row.phone === 'string' ? normalizePhone(row.phone, false) : undefined;
}

/** True when a subscriber row (`id`, `email`, `phone`) belongs to `person`. */
export function subscriberRowBelongsTo(
  row: Readonly<Record<string, unknown>>,
  person: ErasedPerson,
): boolean {
  if (typeof row.id === 'string' && person.hasSubscriberId(row.id)) return true;
  if (typeof row.email === 'string' && person.hasEmail(row.email)) return true;
  const phone = subscriberPhoneOf(row);
  return phone !== undefined && person.hasPhone(phone);
}

/** A person known by plain identifiers, growing as an erasure learns more of them. */
export class KnownPerson implements ErasedPerson {
  readonly subscriberIds = new Set<string>();
  /** Lower case. */
  readonly emails = new Set<string>();
  /** E.164 ({@link erasurePhone}). */
  readonly phones = new Set<string>();
  readonly contactIds = new Set<string>();

  constructor(
    identifiers: {
      subscriberIds?: Iterable<string>;
      emails?: Iterable<string>;
      phones?: Iterable<string>;
      contactIds?: Iterable<string>;
    } = {},
  ) {
    for (const id of identifiers.subscriberIds ?? []) this.subscriberIds.add(id);
    for (const email of identifiers.emails ?? []) this.emails.add(email.toLowerCase());
    for (const phone of identifiers.phones ?? []) this.phones.add(erasurePhone(phone));
    for (const id of identifiers.contactIds ?? []) this.contactIds.add(id);
  }

  /** How many identifiers the person has (it only grows). */
  get size(): number {
    return this.subscriberIds.size + this.emails.size + this.phones.size + this.contactIds.size;
  }

  hasPhone(phone: string): boolean {
    return this.phones.has(erasurePhone(phone));
  }

  hasContactId(contactId: string): boolean {
    return this.contactIds.has(contactId);
  }

  hasSubscriberId(subscriberId: string): boolean {
    return this.subscriberIds.has(subscriberId);
  }

  hasEmail(email: string): boolean {
    return this.emails.has(email.toLowerCase());
  }

  /** Adds a row's subscriber id and e-mail addresses; true when one was new. */
  learnFrom(row: Readonly<Record<string, unknown>>): boolean {
    const before = this.size;
    if (typeof row.subscriber_id === 'string') this.subscriberIds.add(row.subscriber_id);
    for (const email of emailsOfRow(row)) this.emails.add(email.toLowerCase());
    if (typeof row.contact_id === 'string') this.contactIds.add(row.contact_id);
    for (const phone of contactPhonesOfRow(row)) this.phones.add(erasurePhone(phone));
    return this.size > before;
  }
}

/**
 * The hash an erasure log keeps of an identifier instead of the identifier: SHA-256 of the workspace id, the
 * kind and the value (e-mail addresses in lower case), hex.
 */
export function erasureHash(
  workspaceId: string,
  kind: 'subscriber' | 'email' | 'phone' | 'contact',
  value: string,
): string {
  const normalized = kind === 'email' ? value.toLowerCase() : value;
  return createHash('sha256').update(`${workspaceId}\u0000${kind}\u0000${normalized}`).digest('hex');
}

/** One erasure as the erasure log keeps it: when, and whose (hashed), or the whole workspace. */
export interface ErasureEntry {
  /** When the erasure ran (epoch ms): data sent before it is erased data. */
  erasedAtMs: number;
  /** `all`: every row of the workspace; else the person's hashed identifiers. */
  kind: 'all' | 'person';
  subscriberIdHashes: readonly string[];
  emailHashes: readonly string[];
  /** Phone numbers in E.164 ({@link erasurePhone}); absent in entries written before phones were erasable. */
  phoneHashes?: readonly string[];
  contactIdHashes?: readonly string[];
}

/** The erasures of a workspace (`@sluice/control` `ErasureLogStore`), as `events redrive` consults them. */
export interface ErasureLog {
  erasuresOf(workspaceId: string): Promise<readonly ErasureEntry[]>;
}

/** The person of an erasure entry, matched through the hashes. */
export function personOfEntry(workspaceId: string, entry: ErasureEntry): ErasedPerson {
  const ids = new Set(entry.subscriberIdHashes);
  const emails = new Set(entry.emailHashes);
  const phones = new Set(entry.phoneHashes ?? []);
  const contacts = new Set(entry.contactIdHashes ?? []);
  return {
    hasSubscriberId: (id) => ids.has(erasureHash(workspaceId, 'subscriber', id)),
    hasEmail: (email) => emails.has(erasureHash(workspaceId, 'email', email)),
    hasPhone: (phone) =>
      phones.size > 0 && phones.has(erasureHash(workspaceId, 'phone', erasurePhone(phone))),
    hasContactId: (id) => contacts.has(erasureHash(workspaceId, 'contact', id)),
  };
}
