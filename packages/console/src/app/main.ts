/**
 * The Sluice console: one page, routed by the URL's hash, talking to the API with the key the person signed in
 * with. The key lives in this tab's sessionStorage only (never in a URL, a cookie or localStorage).
 *
 * Routes: `#/` the exports; `#/new` create; `#/exports/<id>` one export with its backfills and run history;
 * `#/exports/<id>/edit`.
 */
import { exportState, formatBytes, formatCount } from '@sluice/api/view-format';
import { DATASETS, FREQUENCIES } from '@sluice/core/datasets';
import { maskAccessKeyId, PROVIDERS } from '@sluice/core/destination';
import { ApiError, type ChildOrganization, type DataExportView, SluiceApi } from './api.js';
import { type BackfillsSection, backfillsSection } from './backfills-view.js';
import { barChart, lagChart, lagLegend } from './charts.js';
import { childPicker } from './children-view.js';
import { h } from './dom.js';
import { clearFieldErrors, field, notice, showFieldErrors } from './forms.js';
import './console.css';
import { formatDuration, formatTime, runHistory } from './history.js';
import {
  checkExportForm,
  checkMove,
  childrenLabel,
  compressionsOf,
  HELP,
  healthLine,
  LABELS,
  label,
  minimalPolicy,
  nextScheduledRun,
  readSchedule,
  SCHEDULED_FREQUENCIES,
  sameChildren,
  sameSchedule,
  scheduleLabel,
} from './options.js';

const KEY_STORAGE = 'sluice.apiKey';
const REFRESH_MS = 2_000;

let apiUrl = '/v1';
let refreshTimer: number | undefined;
/**
 * Routes taken so far: a view that loads before it shows renders only if no route was taken since it began
 * (signing in routes twice, once by its hash change, and the slower of two views must not win).
 */
let routeCount = 0;
/** The open export page's backfills section, stopped when the page is left. */
let openBackfills: BackfillsSection | undefined;
const root = document.getElementById('app') as HTMLElement;

function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

function api(): SluiceApi {
  return new SluiceApi(apiUrl, apiKey() ?? '');
}

/** Replaces the page body below the header. */
function show(...content: Node[]): void {
  const key = apiKey();
  root.replaceChildren(
    h(
      'header',
      {},
      h('a', { href: '#/', class: 'brand' }, 'Sluice console'),
      key
        ? h(
            'span',
            { class: 'who' },
            h('span', { 'data-testid': 'key' }, `Key ${maskAccessKeyId(key)}`),
            h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out'),
          )
        : null,
    ),
    h('main', {}, ...content),
  );
}

function signOut(): void {
  sessionStorage.removeItem(KEY_STORAGE);
  location.hash = '#/';
  void route();
}

// --- sign in ---------------------------------------------------------------------------------------

function signInView(problem?: string): void {
  const input = h('input', {
    id: 'api-key',
    name: 'apiKey',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'slk_…',
  });
  const form = h(
    'form',
    { class: 'card narrow', onsubmit: (event) => void signIn(event, input.value.trim()) },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'Paste an API key of your workspace. It stays in this browser tab only.'),
    h('label', { for: 'api-key' }, 'API key'),
    input,
    problem ? h('p', { class: 'error', role: 'alert' }, problem) : null,
    h('button', { type: 'submit' }, 'Sign in'),
  );
  show(form);
  input.focus();
}

async function signIn(event: Event, key: string): Promise<void> {
  event.preventDefault();
  if (key === '') return signInView('Enter an API key.');
  try {
    await new SluiceApi(apiUrl, key).list();
  } catch (error) {
    const refused = error instanceof ApiError && (error.status === 401 || error.status === 403);
    return signInView(refused ? 'This key is not valid (or has been revoked).' : (error as Error).message);
  }
  sessionStorage.setItem(KEY_STORAGE, key);
  location.hash = '#/';
  await route();
}

// --- list ------------------------------------------------------------------------------------------

/** The export's state as the CLI prints it (`active`, `paused`, `failed (3 in a row)`…) and its CSS class. */
function stateBadge(view: DataExportView, testId?: string): HTMLElement {
  const state = exportState(view);
  return h('span', { class: `state ${state.split(' ')[0]}`, 'data-testid': testId }, state);
}

function exportedThroughList(view: DataExportView): HTMLElement {
  return h(
    'ul',
    { class: 'through' },
    ...Object.entries(view.exportedThrough).map(([dataset, through]) =>
      h('li', {}, h('span', { class: 'dataset' }, label('dataset', dataset)), ' ', formatTime(through)),
    ),
  );
}

async function listView(): Promise<void> {
  const routed = routeCount;
  let exports: DataExportView[];
  try {
    exports = await api().list();
  } catch (error) {
    if (routed === routeCount) show(notice(error));
    return;
  }
  if (routed !== routeCount) return;
  const rows = exports.map((view) =>
    h(
      'tr',
      { 'data-export': view.id },
      h('td', {}, h('a', { href: `#/exports/${encodeURIComponent(view.id)}` }, view.name)),
      h('td', {}, stateBadge(view)),
      h('td', {}, label('frequency', view.frequency)),
      h('td', {}, exportedThroughList(view)),
      h('td', {}, formatTime(view.lastRunAt)),
    ),
  );
  show(
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Data exports'),
      h('a', { href: '#/new', class: 'button' }, 'New export'),
    ),
    exports.length === 0
      ? h('p', { class: 'empty' }, 'No export yet.')
      : h(
          'table',
          { class: 'exports' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...['Name', 'State', 'Frequency', 'Exported through', 'Last run'].map((t) => h('th', {}, t)),
            ),
          ),
          h('tbody', {}, ...rows),
        ),
  );
}

// --- create and edit -------------------------------------------------------------------------------

/** The form's fields, named as the API's; `issues` are shown beside the field their path starts with. */
const TEXT_FIELDS = [
  ['name', 'Name'],
  ['bucket', 'Bucket'],
  ['region', 'Region'],
  ['endpoint', 'Endpoint (S3-compatible storage only)'],
  ['pathPrefix', 'Path prefix'],
  ['accessKeyId', 'Access key id'],
  ['secretAccessKey', 'Secret access key'],
  ['roleArn', 'Role ARN (instead of keys)'],
  ['kmsKeyId', 'KMS key'],
] as const;

/** A select of the API's values of `kind`, shown by their labels. */
function enumSelect(name: string, values: readonly string[], selected: string): HTMLSelectElement {
  return h(
    'select',
    { id: `f-${name}`, name },
    ...values.map((value) => h('option', { value, selected: value === selected }, label(name, value))),
  ) as HTMLSelectElement;
}

/** The warnings of the last save of each export, shown on its page until it is left. */
const savedWarnings = new Map<string, { code: string; message: string }[]>();

/** The workspace's child organisations, or why they could not be read. */
async function readChildren(): Promise<ChildOrganization[] | Error> {
  try {
    return await api().children();
  } catch (error) {
    // An API without organisations (no such route) has no children to offer.
    if (error instanceof ApiError && error.status === 404) return [];
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** The export's `childOrganizations` (none for a new export, or one from before organisations). */
function childOrganizationsOf(view: DataExportView | undefined): string[] {
  return view?.childOrganizations ?? [];
}

async function formView(id?: string): Promise<void> {
  const routed = routeCount;
  let current: DataExportView | undefined;
  const children = readChildren();
  if (id !== undefined) {
    try {
      current = await api().get(id);
    } catch (error) {
      if (routed === routeCount) show(notice(error));
      return;
    }
  }
  const picker = childPicker(await children, childOrganizationsOf(current));
  if (routed !== routeCount) return;
  const inputs = new Map<string, HTMLInputElement>();
  const textFields = TEXT_FIELDS.map(([name, label]) => {
    const secret = name === 'secretAccessKey' || name === 'accessKeyId';
    const input = h('input', {
      id: `f-${name}`,
      name,
      type: name === 'secretAccessKey' ? 'password' : 'text',
      autocomplete: 'off',
      value: current && !secret ? String(current[name as keyof DataExportView] ?? '') : '',
      placeholder: current && name === 'accessKeyId' ? (current.accessKeyId ?? '') : '',
    });
    inputs.set(name, input);
    const hint =
      current && secret
        ? 'Leave empty to keep the stored credentials; give both to replace them.'
        : HELP[name];
    return field(name, label, input, hint);
  });
  const provider = h(
    'select',
    { id: 'f-provider', name: 'provider', disabled: current !== undefined },
    ...PROVIDERS.map((p) =>
      h('option', { value: p, selected: (current?.provider ?? 's3') === p }, label('provider', p)),
    ),
  );
  const frequency = enumSelect('frequency', FREQUENCIES, current?.frequency ?? 'hourly');
  const format = enumSelect('format', Object.keys(LABELS.format ?? {}), current?.format ?? 'jsonl');
  const compression = enumSelect('compression', compressionsOf(format.value), current?.compression ?? 'gzip');
  const encryption = enumSelect(
    'serverSideEncryption',
    Object.keys(LABELS.serverSideEncryption ?? {}),
    current?.serverSideEncryption ?? '',
  );
  const layout = enumSelect('layout', Object.keys(LABELS.layout ?? {}), current?.layout ?? 'date');
  const numberInput = (name: string, value: number | undefined, placeholder: string) =>
    h('input', {
      id: `f-schedule-${name}`,
      name: `schedule.${name}`,
      type: 'text',
      inputmode: 'numeric',
      autocomplete: 'off',
      size: 4,
      placeholder,
      value: value === undefined ? '' : String(value).padStart(2, '0'),
    });
  const scheduleHour = numberInput('hour', current?.schedule?.hour, 'HH');
  const scheduleMinute = numberInput('minute', current?.schedule?.minute, 'MM');
  const schedule = h(
    'fieldset',
    { id: 'f-schedule', class: 'schedule' },
    h('label', { for: scheduleHour.id }, 'Hour (UTC)'),
    scheduleHour,
    h('label', { for: scheduleMinute.id }, 'Minute'),
    scheduleMinute,
  );
  const nextRun = h('p', { class: 'next-run', 'data-testid': 'next-run' });
  const policy = h('pre', { class: 'policy', 'data-testid': 'policy' });
  const externalId = current?.externalId
    ? h(
        'p',
        { 'data-testid': 'external-id' },
        `External ID the role's trust policy must require: ${current.externalId}`,
      )
    : null;
  const updateDependents = () => {
    // Only what changed is touched: a change event fires as a click leaves a field, and the click must land.
    const allowed = compressionsOf(format.value);
    const offered = [...compression.options].map((option) => option.value);
    if (offered.join() !== allowed.join()) {
      const chosen = compression.value;
      compression.replaceChildren(
        ...allowed.map((value) =>
          h('option', { value, selected: value === chosen }, label('compression', value)),
        ),
      );
    }
    const text = minimalPolicy({
      bucket: inputs.get('bucket')?.value ?? '',
      pathPrefix: inputs.get('pathPrefix')?.value ?? '',
      serverSideEncryption: encryption.value,
      kmsKeyId: inputs.get('kmsKeyId')?.value ?? '',
    });
    if (policy.textContent !== text) policy.textContent = text;
    const scheduled = SCHEDULED_FREQUENCIES.includes(frequency.value);
    scheduleMinute.disabled = !scheduled;
    scheduleHour.disabled = frequency.value !== 'daily';
    const when = scheduleText();
    if (nextRun.textContent !== when) nextRun.textContent = when;
  };
  /** What the schedule fields give, in words, with the next run on it (ISO 24-hour UTC, as everywhere). */
  const scheduleText = (): string => {
    const read = readSchedule(frequency.value, scheduleHour.value, scheduleMinute.value);
    if (read.issues.length > 0) return '';
    const runs = scheduleLabel(frequency.value, read.schedule);
    if (read.schedule === null) return `${runs}.`;
    const next = formatTime(
      new Date(nextScheduledRun(frequency.value, read.schedule, Date.now())).toISOString(),
    );
    const planned =
      current?.isEnabled &&
      current.nextRunAt &&
      Date.parse(current.nextRunAt) > Date.now() &&
      !sameSchedule(read.schedule, current.schedule)
        ? ` The run already planned, at ${formatTime(current.nextRunAt)}, keeps its time.`
        : '';
    return `${runs}. Next run on this schedule: ${next}.${planned}`;
  };
  const datasetBoxes = DATASETS.map((dataset) =>
    h(
      'label',
      { class: 'check' },
      h('input', {
        type: 'checkbox',
        name: 'datasets',
        value: dataset,
        checked: current?.datasets.includes(dataset) ?? false,
      }),
      ` ${dataset}`,
      h('small', {}, ` ${label('dataset', dataset)}`),
    ),
  );
  const datasets = h('fieldset', { id: 'f-datasets' }, ...datasetBoxes);
  const startFrom = h('input', { id: 'f-startFrom', name: 'startFrom', type: 'text', autocomplete: 'off' });
  const formError = h('div', { class: 'form-error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, current ? 'Save' : 'Create and test connection');

  const form = h(
    'form',
    { class: 'card', novalidate: true },
    h('h1', {}, current ? `Edit ${current.name}` : 'New data export'),
    h(
      'p',
      {},
      'Saving tests the connection: Sluice writes a small test file to the bucket before it keeps the settings.',
    ),
    formError,
    field('provider', 'Provider', provider, HELP.provider),
    ...textFields.slice(0, 5),
    h('h2', {}, 'Credentials'),
    ...textFields.slice(5, 8),
    externalId,
    field('datasets', 'Datasets', datasets, HELP.datasets),
    picker.element,
    field('frequency', 'Frequency', frequency, HELP.frequency),
    field('format', 'Format', format, HELP.format),
    field('compression', 'Compression', compression, HELP.compression),
    field('serverSideEncryption', 'Encryption', encryption, HELP.serverSideEncryption),
    textFields[8] ?? null,
    current ? null : field('startFrom', 'Start from (UTC)', startFrom, HELP.startFrom),
    h(
      'div',
      { class: 'files-and-schedule' },
      h('h2', {}, 'Files and schedule'),
      field('layout', 'Layout', layout, HELP.layout),
      field('schedule', 'Run time', schedule, HELP.schedule),
      nextRun,
    ),
    h('h2', {}, 'Minimal bucket policy for these options'),
    h('p', {}, 'The least the access key (or role) needs on Amazon S3, to paste into IAM:'),
    policy,
    h(
      'div',
      { class: 'actions' },
      submit,
      h(
        'a',
        { href: current ? `#/exports/${encodeURIComponent(current.id)}` : '#/', class: 'button secondary' },
        'Cancel',
      ),
    ),
  );

  form.addEventListener('input', updateDependents);
  form.addEventListener('change', updateDependents);
  updateDependents();

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = datasetBoxes
      .map((label) => label.querySelector('input') as HTMLInputElement)
      .filter((box) => box.checked)
      .map((box) => box.value);
    const value = (name: string) => (inputs.get(name)?.value ?? '').trim();
    const scheduled = readSchedule(frequency.value, scheduleHour.value, scheduleMinute.value);
    const body: Record<string, unknown> = {};
    if (current === undefined) {
      body.provider = provider.value;
      for (const [name] of TEXT_FIELDS) if (value(name) !== '') body[name] = value(name);
      body.datasets = chosen;
      body.frequency = frequency.value;
      body.format = format.value;
      body.compression = compression.value;
      if (encryption.value !== '') body.serverSideEncryption = encryption.value;
      if (startFrom.value.trim() !== '') body.startFrom = startFrom.value.trim();
      if (layout.value !== 'date') body.layout = layout.value;
      if (scheduled.schedule !== null) body.schedule = scheduled.schedule;
      if (picker.value().length > 0) body.childOrganizations = picker.value();
    } else {
      for (const [name] of TEXT_FIELDS) {
        const before =
          name === 'accessKeyId' || name === 'secretAccessKey' ? '' : String(current[name] ?? '');
        if (value(name) !== before)
          body[name] =
            value(name) === '' && (name === 'endpoint' || name === 'kmsKeyId') ? null : value(name);
      }
      if (chosen.join(',') !== current.datasets.join(',')) body.datasets = chosen;
      if (frequency.value !== current.frequency) body.frequency = frequency.value;
      if (format.value !== current.format) body.format = format.value;
      if (compression.value !== current.compression) body.compression = compression.value;
      if (encryption.value !== (current.serverSideEncryption ?? ''))
        body.serverSideEncryption = encryption.value === '' ? null : encryption.value;
      if (layout.value !== current.layout) body.layout = layout.value;
      if (!sameSchedule(scheduled.schedule, current.schedule)) body.schedule = scheduled.schedule;
      if (!sameChildren(picker.value(), childOrganizationsOf(current)))
        body.childOrganizations = picker.value();
    }
    // Checked as the export will be: the layout's rules apply to the form's frequency and datasets, edited or not.
    const issues = [
      ...checkExportForm(
        {
          ...body,
          datasets: chosen,
          frequency: frequency.value,
          layout: layout.value,
          kmsKeyId: value('kmsKeyId'),
          serverSideEncryption: encryption.value,
        },
        current === undefined,
      ),
      ...scheduled.issues,
      ...(current ? checkMove(body, Boolean(current.roleArn)) : []),
      ...(body.childOrganizations === undefined ? [] : picker.issues()),
    ];
    if (issues.length > 0) {
      clearFieldErrors(form, formError);
      showFieldErrors(form, formError, new ApiError('Check the fields marked below.', 0, 'form', issues));
      return;
    }
    void save(body);
  });

  async function save(body: Record<string, unknown>): Promise<void> {
    clearFieldErrors(form, formError);
    submit.disabled = true;
    submit.textContent = 'Testing the connection…';
    try {
      const saved = current ? await api().update(current.id, body) : await api().create(body);
      savedWarnings.set(saved.dataExport.id, saved.warnings);
      location.hash = `#/exports/${encodeURIComponent(saved.dataExport.id)}`;
    } catch (error) {
      showFieldErrors(form, formError, error);
    } finally {
      submit.disabled = false;
      submit.textContent = current ? 'Save' : 'Create and test connection';
    }
  }

  show(form);
}

// --- one export ------------------------------------------------------------------------------------

async function detailView(id: string): Promise<void> {
  const status = h('p', { class: 'status', role: 'status' });
  const summary = h('section', { class: 'card' });
  const backfills = h('section', { class: 'card backfills' });
  const history = h('section', { class: 'card history' });
  const dialog = h('dialog', { id: 'confirm-delete' });
  show(status, summary, backfills, history, dialog);

  const act = async (label: string, action: () => Promise<string | undefined>): Promise<void> => {
    status.className = 'status';
    status.textContent = `${label}…`;
    try {
      status.textContent = (await action()) ?? '';
    } catch (error) {
      status.className = 'status error';
      status.textContent = (error as Error).message;
    }
    await refresh();
  };

  const confirmDelete = (view: DataExportView) => {
    dialog.replaceChildren(
      h(
        'form',
        { method: 'dialog' },
        h(
          'p',
          {},
          `Delete the export “${view.name}”? Its runs stop; files already written stay in the bucket.`,
        ),
        h(
          'div',
          { class: 'actions' },
          h('button', { value: 'delete', class: 'danger' }, 'Delete'),
          h('button', { value: 'cancel', class: 'secondary' }, 'Cancel'),
        ),
      ),
    );
    dialog.onclose = () => {
      if (dialog.returnValue !== 'delete') return;
      void act('Deleting', async () => {
        await api().remove(view.id);
        location.hash = '#/';
        return undefined;
      });
    };
    dialog.showModal();
  };

  async function refresh(): Promise<void> {
    if (location.hash !== `#/exports/${encodeURIComponent(id)}`) return;
    let view: DataExportView;
    let runs: Awaited<ReturnType<SluiceApi['allRuns']>>;
    try {
      [view, runs] = await Promise.all([api().get(id), api().allRuns(id)]);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return;
      status.className = 'status error';
      status.textContent = (error as Error).message;
      return;
    }
    if (openBackfills === undefined && backfills.isConnected) {
      openBackfills = backfillsSection(backfills, api, view);
    }
    const warnings = savedWarnings.get(view.id) ?? [];
    summary.replaceChildren(
      h('div', { class: 'toolbar' }, h('h1', {}, view.name), stateBadge(view, 'state')),
      h('p', { class: 'health', 'data-testid': 'health' }, healthLine(view, Date.now())),
      ...(view.failing
        ? [
            h(
              'p',
              { class: 'error failing', role: 'alert', 'data-testid': 'failing' },
              `Failing since ${formatTime(view.failing.since)}: ${label('failingReason', view.failing.reason)}. ${view.lastError ?? ''}`,
            ),
          ]
        : []),
      ...warnings.map((warning) =>
        h('p', { class: 'warning', 'data-testid': 'warning' }, `Warning: ${warning.message}`),
      ),
      h(
        'dl',
        {},
        ...[
          ['Export id', view.id],
          ['Destination', `${view.provider === 'gcs' ? 'gs' : 's3'}://${view.bucket}/${view.pathPrefix}`],
          ['Provider', label('provider', view.provider)],
          ['Endpoint', view.endpoint ?? 'none (the provider’s own)'],
          ['Region', view.region],
          ...(view.roleArn
            ? [
                ['Role', view.roleArn],
                ['External ID', view.externalId],
              ]
            : [['Access key id', view.accessKeyId]]),
          ['Datasets', view.datasets.map((dataset) => label('dataset', dataset)).join(', ')],
          ['Child organisations', childrenLabel(childOrganizationsOf(view))],
          ['Format', `${label('format', view.format)}, ${label('compression', view.compression)}`],
          [
            'Encryption',
            view.serverSideEncryption
              ? `${label('serverSideEncryption', view.serverSideEncryption)}${view.kmsKeyId ? ` ${view.kmsKeyId}` : ''}`
              : label('serverSideEncryption', ''),
          ],
          ['Frequency', label('frequency', view.frequency)],
          ['Layout', label('layout', view.layout)],
          ['Schedule', scheduleLabel(view.frequency, view.schedule)],
          ['Start from', formatTime(view.startFrom)],
          ['Next run', view.isEnabled ? formatTime(view.nextRunAt) : 'none while paused'],
          ['Last error', view.lastError ?? 'none'],
          ['Rows exported', formatCount(view.totalRowsExported)],
        ].flatMap(([term, value]) => [h('dt', {}, term ?? ''), h('dd', {}, value ?? '')]),
      ),
      h('h2', {}, 'Exported through'),
      exportedThroughList(view),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            onclick: () =>
              void act('Queueing a run', async () =>
                (await api().run(id)).queued ? 'Run queued.' : 'A run is already queued.',
              ),
          },
          'Run now',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: () =>
              void act(view.isEnabled ? 'Pausing' : 'Resuming', async () => {
                await api().update(id, { isEnabled: !view.isEnabled });
                return view.isEnabled ? 'Paused.' : 'Resumed.';
              }),
          },
          view.isEnabled ? 'Pause' : 'Resume',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: () =>
              void act(
                'Testing the connection',
                async () => `Test file written at ${formatTime(await api().test(id))}.`,
              ),
          },
          'Test connection',
        ),
        h('a', { href: `#/exports/${encodeURIComponent(id)}/edit`, class: 'button secondary' }, 'Edit'),
        h('button', { type: 'button', class: 'danger', onclick: () => confirmDelete(view) }, 'Delete'),
      ),
    );
    const data = runHistory(runs, new Date());
    history.replaceChildren(
      h('h2', {}, `Run history (last 14 days, ${data.runs.length} runs)`),
      h('h3', {}, 'Rows per run'),
      barChart({
        label: 'Rows per run',
        runs: data.runs,
        value: (r) => r.rows,
        format: formatCount,
        from: data.from,
        to: data.to,
      }),
      h('h3', {}, 'Bytes per run'),
      barChart({
        label: 'Bytes per run',
        runs: data.runs,
        value: (r) => r.bytes,
        format: formatBytes,
        from: data.from,
        to: data.to,
      }),
      h('h3', {}, 'Lag per dataset after each run'),
      lagChart({
        label: 'Lag per dataset',
        series: data.lag,
        format: formatDuration,
        from: data.from,
        to: data.to,
      }),
      lagLegend(data.lag, (dataset) => label('dataset', dataset)),
      h(
        'table',
        { class: 'runs' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...[
              'Started',
              'Status',
              'Trigger',
              'Datasets',
              'Duration',
              'Rows',
              'Files',
              'Bytes',
              'Error',
            ].map((t) => h('th', {}, t)),
          ),
        ),
        h(
          'tbody',
          {},
          ...runs.slice(0, 50).map((run) =>
            h(
              'tr',
              { 'data-run': run.id },
              h('td', {}, formatTime(run.startedAt)),
              h('td', {}, h('span', { class: `state ${run.status}` }, label('status', run.status))),
              h('td', {}, run.isManual ? 'Manual' : 'Scheduled'),
              h(
                'td',
                {},
                Object.keys(run.stats)
                  .map((dataset) => label('dataset', dataset))
                  .join(', ') || '–',
              ),
              h(
                'td',
                { class: 'num' },
                run.finishedAt ? formatDuration(Date.parse(run.finishedAt) - Date.parse(run.startedAt)) : '…',
              ),
              h(
                'td',
                { class: 'num' },
                // "No rows": a run that found nothing to export, not one that failed before writing any.
                run.status === 'succeeded' && run.rowCount === 0 ? 'No rows' : formatCount(run.rowCount),
              ),
              h('td', { class: 'num' }, formatCount(run.fileCount)),
              h('td', { class: 'num' }, formatBytes(run.byteCount)),
              h('td', {}, run.error ?? ''),
            ),
          ),
        ),
      ),
    );
  }

  await refresh();
  refreshTimer = window.setInterval(() => void refresh(), REFRESH_MS);
}

// --- routing ---------------------------------------------------------------------------------------

async function route(): Promise<void> {
  routeCount += 1;
  window.clearInterval(refreshTimer);
  openBackfills?.stop();
  openBackfills = undefined;
  if (!apiKey()) return signInView();
  const hash = location.hash.replace(/^#/, '') || '/';
  const match = /^\/exports\/([^/]+)(\/edit)?$/.exec(hash);
  if (hash === '/new') return formView();
  if (match?.[1] !== undefined) {
    const id = decodeURIComponent(match[1]);
    return match[2] ? formView(id) : detailView(id);
  }
  return listView();
}

async function start(): Promise<void> {
  try {
    const config = (await (await fetch('config.json', { cache: 'no-store' })).json()) as { apiUrl?: string };
    if (typeof config.apiUrl === 'string') apiUrl = config.apiUrl.replace(/\/$/, '');
  } catch {
    // No config.json: the API on this origin.
  }
  window.addEventListener('hashchange', () => void route());
  await route();
}

void start();
