/**
 * The CDK app (`cdk.json`: `npx tsx infra/app.ts`). Settings come from CDK context, e.g.
 * `npx cdk deploy --all -c stage=prod -c alarmEmail=ops@example.com`; see docs/deploy.md.
 */
import { App } from 'aws-cdk-lib';
import { SettingsError } from './settings.js';
import { buildSluiceApp } from './sluice-app.js';

const app = new App();
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
