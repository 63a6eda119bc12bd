import type { StateMachineDefinition } from 'aws-local-stepfunctions';

/** The two workflows of the CDK app, as Amazon States Language. */
export interface WorkflowDefinitions {
  exportRun: StateMachineDefinition;
  dispatch: StateMachineDefinition;
}

/** The part of a CloudFormation template read here. */
export interface CloudFormationTemplate {
  Resources?: Record<
    string,
    { Type?: string; Properties?: Record<string, unknown>; Metadata?: Record<string, unknown> }
  >;
}

/** Metadata key the workflow constructs set (`infra/constructs/export-run-workflow.ts`). */
const WORKFLOW_METADATA_KEY = 'sluice:workflow';
const WORKFLOW_KEYS = { ExportRun: 'exportRun', Dispatch: 'dispatch' } as const;
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/**
 * Finds the ExportRun and Dispatch state machines in synthesized templates (by the `sluice:workflow`
 * metadata of their resources) and resolves their `DefinitionString`: `Fn::Join` of strings and
 * `Ref`/`Fn::GetAtt` tokens, each token replaced by a placeholder ARN naming the referenced logical id.
 *
 * @throws when a workflow is missing, present twice, or its definition uses an unsupported function
 */
export function definitionsFromTemplates(templates: readonly CloudFormationTemplate[]): WorkflowDefinitions {
  const found: Partial<Record<keyof WorkflowDefinitions, StateMachineDefinition>> = {};
  for (const template of templates) {
    const resources = template.Resources ?? {};
    for (const [logicalId, resource] of Object.entries(resources)) {
      if (resource.Type !== 'AWS::StepFunctions::StateMachine') continue;
      const tag = resource.Metadata?.[WORKFLOW_METADATA_KEY];
      if (tag !== 'ExportRun' && tag !== 'Dispatch') continue;
      const key = WORKFLOW_KEYS[tag];
      if (found[key]) throw new Error(`two ${tag} state machines in the templates`);
      const text = resolveIntrinsic(resource.Properties?.DefinitionString, resources, logicalId);
      if (typeof text !== 'string') throw new Error(`${logicalId}: DefinitionString is not a string`);
      found[key] = JSON.parse(text) as StateMachineDefinition;
    }
  }
  if (!found.exportRun || !found.dispatch) {
    const missing = (['exportRun', 'dispatch'] as const).filter((k) => !found[k]);
    throw new Error(`no ${missing.join(' and ')} state machine in the synthesized templates`);
  }
  return { exportRun: found.exportRun, dispatch: found.dispatch };
}

/** Placeholder value of a `Ref` or `Fn::GetAtt` on a resource of the template. */
function placeholder(
  logicalId: string,
  resources: CloudFormationTemplate['Resources'],
  attribute?: string,
): string {
  switch (logicalId) {
    case 'AWS::Partition':
      return 'aws';
    case 'AWS::Region':
      return REGION;
    case 'AWS::AccountId':
      return ACCOUNT;
    case 'AWS::URLSuffix':
      return 'amazonaws.com';
    default:
      break;
  }
  const type = resources?.[logicalId]?.Type;
  if (type === 'AWS::Lambda::Function' && (attribute === undefined || attribute === 'Arn')) {
    return `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${logicalId}`;
  }
  if (type === 'AWS::StepFunctions::StateMachine' && (attribute === undefined || attribute === 'Arn')) {
    return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${logicalId}`;
  }
  if (type === 'AWS::StepFunctions::StateMachine' && attribute === 'Name') return logicalId;
  return `${logicalId}${attribute ? `.${attribute}` : ''}`;
}

function resolveIntrinsic(
  value: unknown,
  resources: CloudFormationTemplate['Resources'],
  where: string,
): string | unknown {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  if (entries.length !== 1) throw new Error(`${where}: unexpected value in DefinitionString`);
  const [fn, arg] = entries[0]!;
  switch (fn) {
    case 'Fn::Join': {
      const [separator, parts] = arg as [string, unknown[]];
      return parts.map((part) => resolveIntrinsic(part, resources, where)).join(separator);
    }
    case 'Ref':
      return placeholder(arg as string, resources);
    case 'Fn::GetAtt': {
      const [id, attribute] = Array.isArray(arg)
        ? (arg as [string, string])
        : (String(arg).split('.') as [string, string]);
      return placeholder(id, resources, attribute);
    }
    case 'Fn::ImportValue':
      return `imported-${JSON.stringify(arg)}`;
    default:
      throw new Error(`${where}: ${fn} in DefinitionString is not supported by the local runtime`);
  }
}
