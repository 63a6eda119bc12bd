import aslValidator from 'asl-validator';
import { beforeAll, describe, expect, it } from 'vitest';
import { definitionsFromTemplates, type WorkflowDefinitions } from '../../packages/local/src/template.js';
import { synthesize } from './helpers.js';

let definitions: WorkflowDefinitions;
beforeAll(() => {
  // Synthesized as `cdk synth` does, CloudFormation's default rules included: an invalid template throws here.
  const built = synthesize({}, { cfnValidation: true });
  definitions = definitionsFromTemplates([built.statefulTemplate.toJSON(), built.statelessTemplate.toJSON()]);
});

describe('the synthesized state machine definitions', () => {
  it.each(['exportRun', 'dispatch'] as const)(
    '%s is valid Amazon States Language (asl-validator)',
    (name) => {
      // Act
      const { isValid, errorsText } = aslValidator(definitions[name]);

      // Assess
      expect(errorsText('\n')).toBe('');
      expect(isValid).toBe(true);
    },
  );

  it('asl-validator refuses a broken definition (the check is live)', () => {
    // Prepare
    const broken = structuredClone(definitions.exportRun) as { StartAt: string };
    broken.StartAt = 'NoSuchState';

    // Act
    const { isValid } = aslValidator(broken);

    // Assess
    expect(isValid).toBe(false);
  });

  it('runs at most writerConcurrency (default 10) writers at once', () => {
    // Act
    const map = definitions.exportRun.States.WriteWindows as { Type: string; MaxConcurrency?: number };

    // Assess
    expect(map).toMatchObject({ Type: 'Map', MaxConcurrency: 10 });
  });

  it('passes no secret-shaped field in any state payload', () => {
    // Act
    const text = JSON.stringify(definitions);

    // Assess
    expect(text).not.toMatch(/secret|accessKeyId|ciphertext/i);
  });
});
