/**
 * No package reads the environment: each entry point (a Lambda handler's `config.ts`, the local runtime, the
 * CLI) reads it once, validated, and hands the settings to constructors. What is left here is a constant the
 * entry points and the stack share.
 */

/** The CloudWatch namespace of every Sluice metric (Powertools `POWERTOOLS_METRICS_NAMESPACE` in the functions). */
export const SLUICE_METRICS_NAMESPACE = 'Sluice';
