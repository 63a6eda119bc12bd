/**
 * Compares an OpenAPI document with the reference it was written from, and checks the differences against a
 * list of known deviations. Pure: it takes parsed documents and returns findings.
 *
 * Rules:
 * - additions pass: a new path, operation, optional parameter, request content type, response status code,
 *   response header or content type, server, component, optional property, enum value;
 * - every other difference is a deviation: anything removed, an operationId, security, a type, the set of
 *   required properties, a parameter's or body's `required`, a constraint (`maxLength`, `minItems`, `format`,
 *   `default`, `additionalProperties`, ...) added, removed or changed;
 * - text is free: `description`, `summary`, `title`, `example(s)`, `externalDocs`, `deprecated`, `tags` and
 *   `info` are not compared;
 * - local `$ref`s are followed, so a schema moved into `components` compares as the inline one it replaced.
 *
 * A finding is located by `at`, the keys leading to it joined by spaces, such as
 * `paths /data-exports/{id} patch responses 400` or `components schemas DataExport properties region`.
 */
import { isDeepStrictEqual } from 'node:util';
import { parse } from 'yaml';

type Json = Record<string, unknown>;

/** One difference between the reference and the document. */
export interface Finding {
  kind: 'addition' | 'deviation';
  /** Where: the keys leading to it, joined by spaces. */
  at: string;
  /** What changed, in words. */
  change: string;
}

/** A deviation the document makes on purpose, with the reason. */
export interface Deviation {
  at: string;
  reason: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Keywords that document and do not constrain: never compared. */
const TEXT_KEYWORDS = new Set([
  'description',
  'summary',
  'title',
  'example',
  'examples',
  'externalDocs',
  'deprecated',
  '$comment',
  'tags',
]);
/** Schema keywords compared by their own rule in {@link compareSchema}. */
const SCHEMA_RULES = new Set(['type', 'enum', 'required', 'properties', 'items', 'additionalProperties']);

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? 'nothing';
}

/** Walks both documents and collects the findings. */
class Comparison {
  readonly findings: Finding[] = [];
  /** The pairs of `$ref`s being compared, so that a recursive schema is compared once. */
  private readonly refsInProgress = new Set<string>();

  constructor(
    private readonly reference: Json,
    private readonly document: Json,
  ) {}

  private add(at: string[], change: string): void {
    this.findings.push({ kind: 'addition', at: at.join(' '), change });
  }

  private deviate(at: string[], change: string): void {
    this.findings.push({ kind: 'deviation', at: at.join(' '), change });
  }

  /** Follows a local `$ref` (`#/components/...`) in the given document, several hops if need be. */
  private resolve(value: unknown, root: Json): unknown {
    let current = value;
    for (let hops = 0; isObject(current) && typeof current.$ref === 'string' && hops < 20; hops += 1) {
      const ref = current.$ref;
      if (!ref.startsWith('#/')) return current;
      current = ref
        .slice(2)
        .split('/')
        .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
        .reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), root);
    }
    return current;
  }

  /**
   * Compares the entries of two maps: a missing one is a deviation, a new one an addition (or what
   * `added` says), a common one goes to `each`.
   */
  private entries(
    at: string[],
    what: string,
    ref: unknown,
    doc: unknown,
    each: (at: string[], ref: unknown, doc: unknown) => void,
    added: (at: string[], name: string, doc: unknown) => void = (where, name) =>
      this.add(where, `adds ${what} ${name}`),
  ): void {
    const refMap = isObject(ref) ? ref : {};
    const docMap = isObject(doc) ? doc : {};
    for (const [name, value] of Object.entries(refMap)) {
      if (!(name in docMap)) this.deviate([...at, name], `removes ${what} ${name}`);
      else each([...at, name], value, docMap[name]);
    }
    for (const [name, value] of Object.entries(docMap)) {
      if (!(name in refMap)) added([...at, name], name, value);
    }
  }

  /** Compares the keys not covered by a rule: equal, or a deviation per key. */
  private sameOtherKeys(at: string[], ref: Json, doc: Json, ruled: Set<string>): void {
    const keys = new Set([...Object.keys(ref), ...Object.keys(doc)]);
    for (const key of keys) {
      if (TEXT_KEYWORDS.has(key) || ruled.has(key)) continue;
      if (isDeepStrictEqual(ref[key], doc[key])) continue;
      if (!(key in doc)) this.deviate(at, `removes ${key} ${show(ref[key])}`);
      else if (!(key in ref)) this.deviate(at, `adds ${key} ${show(doc[key])}`);
      else this.deviate(at, `changes ${key} from ${show(ref[key])} to ${show(doc[key])}`);
    }
  }

  run(): Finding[] {
    const ref = this.reference;
    const doc = this.document;
    if (ref.openapi !== doc.openapi) {
      this.deviate(['openapi'], `changes the version from ${show(ref.openapi)} to ${show(doc.openapi)}`);
    }
    this.servers(ref.servers, doc.servers);
    if (!isDeepStrictEqual(ref.security, doc.security)) {
      this.deviate(['security'], `changes security from ${show(ref.security)} to ${show(doc.security)}`);
    }
    this.entries(['paths'], 'path', ref.paths, doc.paths, (at, refItem, docItem) =>
      this.pathItem(at, refItem as Json, docItem as Json),
    );
    const refComponents = isObject(ref.components) ? ref.components : {};
    const docComponents = isObject(doc.components) ? doc.components : {};
    const compare: Record<string, (at: string[], ref: unknown, doc: unknown) => void> = {
      schemas: (at, r, d) => this.schema(at, r, d),
      responses: (at, r, d) => this.response(at, r, d),
      parameters: (at, r, d) => this.parameter(at, r as Json, d as Json),
      headers: (at, r, d) => this.header(at, r, d),
      requestBodies: (at, r, d) => this.requestBody(at, r, d),
      securitySchemes: (at, r, d) => this.sameOtherKeys(at, r as Json, d as Json, new Set()),
    };
    this.entries(['components'], 'component section', refComponents, docComponents, (at, r, d) => {
      const section = at.at(-1) as string;
      const each =
        compare[section] ?? ((where, a, b) => this.sameOtherKeys(where, a as Json, b as Json, new Set()));
      this.entries(at, section.replace(/s$/, ''), r, d, each);
    });
    return this.findings;
  }

  private servers(ref: unknown, doc: unknown): void {
    const urls = (servers: unknown) =>
      Array.isArray(servers) ? servers.map((server) => String((server as Json).url)) : [];
    const refUrls = urls(ref);
    const docUrls = urls(doc);
    for (const url of refUrls) if (!docUrls.includes(url)) this.deviate(['servers'], `removes server ${url}`);
    for (const url of docUrls) if (!refUrls.includes(url)) this.add(['servers'], `adds server ${url}`);
  }

  private pathItem(at: string[], ref: Json, doc: Json): void {
    for (const method of METHODS) {
      if (ref[method] !== undefined && doc[method] === undefined) {
        this.deviate([...at, method], `removes operation ${method.toUpperCase()}`);
      } else if (ref[method] === undefined && doc[method] !== undefined) {
        this.add([...at, method], `adds operation ${method.toUpperCase()}`);
      } else if (ref[method] !== undefined) {
        this.operation([...at, method], ref, doc, ref[method] as Json, doc[method] as Json);
      }
    }
  }

  private operation(at: string[], refItem: Json, docItem: Json, ref: Json, doc: Json): void {
    for (const key of ['operationId', 'security']) {
      if (!isDeepStrictEqual(ref[key], doc[key])) {
        this.deviate(at, `changes ${key} from ${show(ref[key])} to ${show(doc[key])}`);
      }
    }
    this.parameters(at, refItem, docItem, ref, doc);
    if (ref.requestBody === undefined && doc.requestBody !== undefined) {
      const body = this.resolve(doc.requestBody, this.document) as Json;
      if (body.required === true) this.deviate([...at, 'requestBody'], 'adds a required request body');
      else this.add([...at, 'requestBody'], 'adds an optional request body');
    } else if (ref.requestBody !== undefined && doc.requestBody === undefined) {
      this.deviate([...at, 'requestBody'], 'removes the request body');
    } else if (ref.requestBody !== undefined) {
      this.requestBody([...at, 'requestBody'], ref.requestBody, doc.requestBody);
    }
    this.entries([...at, 'responses'], 'status', ref.responses, doc.responses, (where, r, d) =>
      this.response(where, r, d),
    );
  }

  /** Path-level and operation-level parameters, keyed by `in` and `name`. */
  private parameters(at: string[], refItem: Json, docItem: Json, ref: Json, doc: Json): void {
    const byKey = (root: Json, item: Json, operation: Json) => {
      const list = [
        ...(Array.isArray(item.parameters) ? item.parameters : []),
        ...(Array.isArray(operation.parameters) ? operation.parameters : []),
      ];
      const map: Json = {};
      for (const raw of list) {
        const parameter = this.resolve(raw, root) as Json;
        map[`${String(parameter.in)} ${String(parameter.name)}`] = parameter;
      }
      return map;
    };
    this.entries(
      [...at, 'parameters'],
      'parameter',
      byKey(this.reference, refItem, ref),
      byKey(this.document, docItem, doc),
      (where, r, d) => this.parameter(where, r as Json, d as Json),
      (where, name, d) => {
        if ((d as Json).required === true) this.deviate(where, `adds a required parameter ${name}`);
        else this.add(where, `adds an optional parameter ${name}`);
      },
    );
  }

  private parameter(at: string[], ref: Json, doc: Json): void {
    const r = this.resolve(ref, this.reference) as Json;
    const d = this.resolve(doc, this.document) as Json;
    this.sameOtherKeys(at, r, d, new Set(['schema', 'content']));
    this.schema([...at, 'schema'], r.schema, d.schema);
    this.content(at, r.content, d.content);
  }

  private requestBody(at: string[], ref: unknown, doc: unknown): void {
    const r = this.resolve(ref, this.reference) as Json;
    const d = this.resolve(doc, this.document) as Json;
    this.sameOtherKeys(at, r, d, new Set(['content']));
    this.content(at, r.content, d.content);
  }

  private response(at: string[], ref: unknown, doc: unknown): void {
    if (isObject(ref) && isObject(doc) && ref.$ref !== undefined && ref.$ref === doc.$ref) return;
    const r = this.resolve(ref, this.reference) as Json;
    const d = this.resolve(doc, this.document) as Json;
    this.entries([...at, 'headers'], 'header', r.headers, d.headers, (where, a, b) =>
      this.header(where, a, b),
    );
    this.content(at, r.content, d.content);
  }

  private header(at: string[], ref: unknown, doc: unknown): void {
    const r = this.resolve(ref, this.reference) as Json;
    const d = this.resolve(doc, this.document) as Json;
    this.sameOtherKeys(at, r, d, new Set(['schema']));
    this.schema([...at, 'schema'], r.schema, d.schema);
  }

  /** Media types: a removed one is a deviation, an added one an addition; schemas compared. */
  private content(at: string[], ref: unknown, doc: unknown): void {
    if (ref === undefined && doc === undefined) return;
    this.entries([...at, 'content'], 'media type', ref, doc, (where, r, d) => {
      this.schema([...where, 'schema'], (r as Json).schema, (d as Json).schema);
    });
  }

  private schema(at: string[], refRaw: unknown, docRaw: unknown): void {
    if (refRaw === undefined && docRaw === undefined) return;
    if (isObject(refRaw) && isObject(docRaw) && refRaw.$ref !== undefined && refRaw.$ref === docRaw.$ref) {
      return; // the same component, compared under components
    }
    const ref = this.resolve(refRaw, this.reference);
    const doc = this.resolve(docRaw, this.document);
    if (!isObject(ref) || !isObject(doc)) {
      if (!isDeepStrictEqual(ref, doc))
        this.deviate(at, `changes the schema from ${show(ref)} to ${show(doc)}`);
      return;
    }
    const refs = `${show(isObject(refRaw) ? refRaw.$ref : undefined)}|${show(isObject(docRaw) ? docRaw.$ref : undefined)}`;
    const followsRef = refs !== 'nothing|nothing';
    if (followsRef && this.refsInProgress.has(refs)) return;
    if (followsRef) this.refsInProgress.add(refs);
    this.schemaKeywords(at, ref, doc);
    if (followsRef) this.refsInProgress.delete(refs);
  }

  private schemaKeywords(at: string[], ref: Json, doc: Json): void {
    const types = (schema: Json) => [schema.type ?? []].flat().map(String).sort();
    if (!isDeepStrictEqual(types(ref), types(doc))) {
      this.deviate(at, `changes the type from ${show(ref.type)} to ${show(doc.type)}`);
    }
    if (Array.isArray(ref.enum) || Array.isArray(doc.enum)) {
      const refValues = Array.isArray(ref.enum) ? ref.enum : undefined;
      const docValues = Array.isArray(doc.enum) ? doc.enum : undefined;
      if (refValues === undefined) this.deviate(at, `adds enum ${show(docValues)}`);
      else if (docValues === undefined) this.deviate(at, `removes enum ${show(refValues)}`);
      else {
        const has = (list: unknown[], value: unknown) => list.some((item) => isDeepStrictEqual(item, value));
        const removed = refValues.filter((value) => !has(docValues, value));
        const added = docValues.filter((value) => !has(refValues, value));
        if (removed.length > 0) this.deviate(at, `removes enum values ${show(removed)}`);
        if (added.length > 0) this.add(at, `adds enum values ${show(added)}`);
      }
    }
    const required = (schema: Json) => (Array.isArray(schema.required) ? schema.required.map(String) : []);
    const refRequired = required(ref);
    const docRequired = required(doc);
    const dropped = refRequired.filter((name) => !docRequired.includes(name));
    const newlyRequired = docRequired.filter((name) => !refRequired.includes(name));
    if (dropped.length > 0) this.deviate(at, `no longer requires ${dropped.join(', ')}`);
    if (newlyRequired.length > 0) this.deviate(at, `now requires ${newlyRequired.join(', ')}`);

    this.entries([...at, 'properties'], 'property', ref.properties, doc.properties, (where, r, d) =>
      this.schema(where, r, d),
    );
    if (ref.items !== undefined || doc.items !== undefined) {
      if (ref.items === undefined) this.deviate([...at, 'items'], 'adds an items schema');
      else if (doc.items === undefined) this.deviate([...at, 'items'], 'removes the items schema');
      else this.schema([...at, 'items'], ref.items, doc.items);
    }
    this.additionalProperties(at, ref.additionalProperties, doc.additionalProperties);
    this.sameOtherKeys(at, ref, doc, SCHEMA_RULES);
  }

  private additionalProperties(at: string[], ref: unknown, doc: unknown): void {
    const open = (value: unknown) => value === undefined || value === true || isDeepStrictEqual(value, {});
    if (open(ref) && open(doc)) return;
    if (isObject(ref) && isObject(doc)) {
      this.schema([...at, 'additionalProperties'], ref, doc);
      return;
    }
    if (!isDeepStrictEqual(ref, doc)) {
      this.deviate(at, `changes additionalProperties from ${show(ref)} to ${show(doc)}`);
    }
  }
}

/** Every difference between `reference` and `document`, additions and deviations, in document order. */
export function diffOpenApi(reference: Json, document: Json): Finding[] {
  return new Comparison(reference, document).run();
}

/**
 * Reads the deviations file: a YAML list of `{at, reason}`, each `at` once, each reason a sentence.
 * Throws with every problem found.
 */
export function parseDeviations(text: string): Deviation[] {
  const parsed: unknown = parse(text) ?? [];
  if (!Array.isArray(parsed)) throw new Error('The deviations file must be a YAML list of {at, reason}.');
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [index, entry] of parsed.entries()) {
    if (!isObject(entry)) {
      problems.push(`entry ${index + 1} is not a mapping`);
      continue;
    }
    const extra = Object.keys(entry).filter((key) => key !== 'at' && key !== 'reason');
    if (typeof entry.at !== 'string' || entry.at.trim() === '') problems.push(`entry ${index + 1} has no at`);
    if (typeof entry.reason !== 'string' || entry.reason.trim().length < 20) {
      problems.push(`entry ${index + 1} (${String(entry.at)}) needs a reason of a sentence at least`);
    }
    if (extra.length > 0) problems.push(`entry ${index + 1} has unknown keys: ${extra.join(', ')}`);
    if (typeof entry.at === 'string') {
      if (seen.has(entry.at)) problems.push(`${entry.at} is listed twice`);
      seen.add(entry.at);
    }
  }
  if (problems.length > 0) throw new Error(`The deviations file is not valid:\n- ${problems.join('\n- ')}`);
  return parsed as Deviation[];
}

/** The outcome of {@link checkDeviations}. */
export interface DeviationCheck {
  /** Deviations found and listed (with their reasons). */
  listed: { finding: Finding; reason: string }[];
  /** Deviations found but not listed: the check fails. */
  unlisted: Finding[];
  /** Listed deviations that no longer happen: the check fails until they are removed from the list. */
  stale: Deviation[];
}

/** Matches the deviation findings to the list by `at`. */
export function checkDeviations(
  findings: readonly Finding[],
  deviations: readonly Deviation[],
): DeviationCheck {
  const byAt = new Map(deviations.map((deviation) => [deviation.at, deviation.reason]));
  const found = findings.filter((finding) => finding.kind === 'deviation');
  const listed: DeviationCheck['listed'] = [];
  const unlisted: Finding[] = [];
  for (const finding of found) {
    const reason = byAt.get(finding.at);
    if (reason === undefined) unlisted.push(finding);
    else listed.push({ finding, reason });
  }
  const stale = deviations.filter((deviation) => !found.some((finding) => finding.at === deviation.at));
  return { listed, unlisted, stale };
}

/** Whether a check passes: every deviation listed, no stale entry. */
export function passes(check: DeviationCheck): boolean {
  return check.unlisted.length === 0 && check.stale.length === 0;
}

/** A readable report of a check, for the terminal. */
export function formatReport(
  findings: readonly Finding[],
  check: DeviationCheck,
  names: { document: string; reference: string; deviations: string },
  { showAdditions = false }: { showAdditions?: boolean } = {},
): string {
  const additions = findings.filter((finding) => finding.kind === 'addition');
  const lines = [`OpenAPI: ${names.document} against ${names.reference}`];
  lines.push(`  ${additions.length} additions${showAdditions ? ':' : ' (--additions lists them)'}`);
  if (showAdditions) for (const finding of additions) lines.push(`    ${finding.at}: ${finding.change}`);
  const listedAt = [...new Set(check.listed.map(({ finding }) => finding.at))];
  lines.push(`  ${listedAt.length} deviations listed in ${names.deviations}:`);
  for (const at of listedAt) {
    const listed = check.listed.filter(({ finding }) => finding.at === at);
    lines.push(`    ${at}: ${listed.map(({ finding }) => finding.change).join('; ')}`);
    lines.push(`      why: ${listed[0]?.reason}`);
  }
  if (check.unlisted.length > 0) {
    lines.push(
      `FAILED: ${check.unlisted.length} deviations from the reference are not listed in ${names.deviations}.`,
      '  Undo each, or add it there as `- at: <where>` with `reason: <why>`:',
    );
    for (const finding of check.unlisted) lines.push(`    ${finding.at}: ${finding.change}`);
  }
  if (check.stale.length > 0) {
    lines.push(
      `FAILED: ${check.stale.length} entries of ${names.deviations} match no deviation any more; remove them:`,
    );
    for (const deviation of check.stale) lines.push(`    ${deviation.at}`);
  }
  if (passes(check)) lines.push('OK: every deviation from the reference is listed with its reason.');
  return lines.join('\n');
}
