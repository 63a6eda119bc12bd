import { readFileSync } from 'node:fs';
import { datasetsReference } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { DATASETS_DOC } from './datasets-doc.js';

describe('docs/datasets.md', () => {
  it('is what the dataset catalogue generates (npm run docs:datasets)', () => {
    expect(readFileSync(DATASETS_DOC, 'utf8')).toBe(datasetsReference());
  });
});
