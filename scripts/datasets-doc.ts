/**
 * Writes `docs/datasets.md`, the customer-facing reference of every dataset's columns, from the dataset
 * catalogue (`datasetsReference` of `@sluice/core`). `npm run docs:datasets`.
 */
import { writeFileSync } from 'node:fs';
import { datasetsReference } from '@sluice/core';

export const DATASETS_DOC = new URL('../docs/datasets.md', import.meta.url);

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].replace(/^.*\//, '/'))) {
  writeFileSync(DATASETS_DOC, datasetsReference());
  console.log('Wrote docs/datasets.md');
}
