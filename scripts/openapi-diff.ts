/**
 * Compares the repository's OpenAPI document with the product contract it was written from:
 *
 *   node --import tsx scripts/openapi-diff.ts <reference.yaml> [--additions]
 *
 * Additions pass; every other difference must be listed, with its reason, in
 * `packages/api/src/openapi/deviations.yaml`, or this exits 1 with the list (rules: `openapi-diff/diff.ts`).
 * `.ci/run` runs it when the reference is beside the repository.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openapiDocument } from '@sluice/api';
import { parse } from 'yaml';
import { checkDeviations, diffOpenApi, formatReport, parseDeviations, passes } from './openapi-diff/diff.js';

const DOCUMENT_NAME = 'packages/api/src/openapi/document.ts';
const DEVIATIONS_NAME = 'packages/api/src/openapi/deviations.yaml';

const args = process.argv.slice(2);
const referencePath = args.find((arg) => !arg.startsWith('--'));
if (referencePath === undefined) {
  console.error('Usage: node --import tsx scripts/openapi-diff.ts <reference.yaml> [--additions]');
  process.exit(2);
}

if (!existsSync(referencePath)) {
  console.error(`No reference document at ${referencePath}`);
  process.exit(2);
}

const reference = parse(readFileSync(referencePath, 'utf8')) as Record<string, unknown>;
const deviations = parseDeviations(
  readFileSync(fileURLToPath(new URL(`../${DEVIATIONS_NAME}`, import.meta.url)), 'utf8'),
);
const findings = diffOpenApi(reference, openapiDocument);
const check = checkDeviations(findings, deviations);
console.log(
  formatReport(
    findings,
    check,
    { document: DOCUMENT_NAME, reference: referencePath, deviations: DEVIATIONS_NAME },
    { showAdditions: args.includes('--additions') },
  ),
);
process.exit(passes(check) ? 0 : 1);
