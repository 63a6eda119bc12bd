import { DAY_MS } from '@sluice/core';
import { z } from 'zod';
import {
  type Env,
  positiveIntegerVariable,
  positiveNumberVariable,
  readEnv,
  requiredVariable,
} from '../env.js';

/** Data exports a workspace may have when `SLUICE_MAX_EXPORTS_PER_WORKSPACE` is unset (the local runtime). */
export const DEFAULT_MAX_EXPORTS_PER_WORKSPACE = 100;

/** The variables of the API function. */
export const apiEnvironment = z.object({
  /** The control table: destinations, cursors, runs. */
  SLUICE_CONTROL_TABLE: requiredVariable,
  /** The KMS key that wraps each destination's data key. */
  SLUICE_KMS_KEY_ID: requiredVariable,
  /** Per API key: steady requests a second (setting `apiKeyRateLimit`). */
  SLUICE_API_KEY_RATE_LIMIT: positiveIntegerVariable,
  /** Per API key: the burst (setting `apiKeyBurstLimit`). */
  SLUICE_API_KEY_BURST_LIMIT: positiveIntegerVariable,
  /** Sluice's own AWS account (the stack's): a roleArn there is refused. */
  SLUICE_ACCOUNT_ID: requiredVariable.regex(/^\d{12}$/, { error: 'is not a 12-digit AWS account id' }),
  /** How long the event log keeps rows, in days (default 35): the earliest a backfill may start. */
  SLUICE_EVENT_RETENTION_DAYS: positiveNumberVariable(35),
  /** The most data exports a workspace may have (setting `maxExportsPerWorkspace`), default 100. */
  SLUICE_MAX_EXPORTS_PER_WORKSPACE: positiveIntegerVariable.default(DEFAULT_MAX_EXPORTS_PER_WORKSPACE),
});

/** Configuration of the API function. */
export interface ApiConfig {
  controlTable: string;
  kmsKeyId: string;
  /** Per API key: steady requests a second and burst. */
  apiKeyRateLimit: { ratePerSecond: number; burst: number };
  /** How long the event log keeps rows, in milliseconds. */
  eventRetentionMs: number;
  /** Sluice's own AWS account id. */
  accountId: string;
  /** The most data exports a workspace may have. */
  maxExportsPerWorkspace: number;
}

/** Reads the API function's configuration; throws naming a missing or invalid variable. */
export function readApiConfig(env: Env): ApiConfig {
  const vars = readEnv(apiEnvironment, env);
  return {
    controlTable: vars.SLUICE_CONTROL_TABLE,
    kmsKeyId: vars.SLUICE_KMS_KEY_ID,
    apiKeyRateLimit: {
      ratePerSecond: vars.SLUICE_API_KEY_RATE_LIMIT,
      burst: vars.SLUICE_API_KEY_BURST_LIMIT,
    },
    eventRetentionMs: vars.SLUICE_EVENT_RETENTION_DAYS * DAY_MS,
    accountId: vars.SLUICE_ACCOUNT_ID,
    maxExportsPerWorkspace: vars.SLUICE_MAX_EXPORTS_PER_WORKSPACE,
  };
}
