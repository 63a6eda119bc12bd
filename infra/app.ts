/**
 * The CDK app (`cdk.json`: `npx tsx infra/app.ts`). Settings come from CDK context, e.g.
 * `npx cdk deploy --all -c stage=prod -c alarmEmail=ops@example.com`; see docs/deploy.md.
 *
 * cdk-nag's AwsSolutionsChecks run on every `cdk synth`/`cdk deploy` from here (any unacknowledged finding
 * fails the synth); `-c sluice:nag=false` turns them off. In-process builders of the app (the infra tests,
 * the local runtime) call `buildSluiceApp` directly and opt in with the same flag.
 */
import { App } from 'aws-cdk-lib';
import { SettingsError } from './settings.js';
import { buildSluiceApp } from './sluice-app.js';

const app = new App();
if (app.node.tryGetContext('sluice:nag') === undefined) app.node.setContext('sluice:nag', true);
try {
  buildSluiceApp(app);
} catch (error) {
  if (error instanceof SettingsError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
app.synth();
