#!/usr/bin/env node
// The `sluice` bin: runs the TypeScript sources through tsx, as the rest of the repository does.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
