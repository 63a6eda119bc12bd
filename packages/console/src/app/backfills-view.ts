/**
 * The Backfills section of an export's page: its backfills (newest first) with per-dataset progress, a form to
 * start one (a range of up to 7 days, or the entire history) and Cancel for the queued and running ones. The
 * list is read again every {@link BACKFILL_REFRESH_MS} while one is queued or running, and no more once none
 * is, or once the page is left.
 */
import { ApiError, type BackfillView, type DataExportView, type SluiceApi } from './api.js';
import {
  anyActive,
  type BackfillFormInput,
  backfillableDatasets,
  backfillRequest,
  defaultRange,
  Poller,
  progressLines,
  rangeText,
} from './backfills.js';
import { h } from './dom.js';
import { clearFieldErrors, field, showFieldErrors } from './forms.js';
import { formatTime } from './history.js';
import { label } from './options.js';

/** The section, and `stop()` for when the page is left. */
export interface BackfillsSection {
  element: HTMLElement;
  stop(): void;
}

/** Puts the section for `view` in the place of `placeholder` and starts reading its backfills. */
export function backfillsSection(
  placeholder: HTMLElement,
  api: () => SluiceApi,
  view: DataExportView,
): BackfillsSection {
  const id = view.id;
  const message = h('p', { class: 'status', 'aria-live': 'polite', 'data-testid': 'backfills-status' });
  const list = h('div', { class: 'backfill-list' });
  const dialog = h('dialog', { id: 'confirm-cancel-backfill' });
  const datasets = backfillableDatasets(view.datasets);
  const element = h(
    'section',
    { class: 'card backfills', 'aria-labelledby': 'backfills-heading' },
    h('h2', { id: 'backfills-heading' }, 'Backfills'),
    h(
      'p',
      {},
      'A backfill exports a chosen range again (up to 7 days), or the entire history, beside the regular ' +
        'export: into the same files, without moving its position.',
    ),
    message,
    list,
    datasets.length === 0
      ? h(
          'p',
          { class: 'empty' },
          'This export has no event dataset to backfill (subscribers are snapshots).',
        )
      : startForm(),
    dialog,
  );

  let active = false;
  const poller = new Poller(async () => {
    if (!element.isConnected) return false;
    try {
      const backfills = await api().backfills(id);
      active = anyActive(backfills);
      list.replaceChildren(backfillsTable(backfills));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return false;
      say((error as Error).message, true);
    }
    return active && element.isConnected;
  });

  function say(text: string, isError = false): void {
    message.className = isError ? 'status error' : 'status';
    message.textContent = text;
  }

  function backfillsTable(backfills: readonly BackfillView[]): HTMLElement {
    if (backfills.length === 0) return h('p', { class: 'empty' }, 'No backfill yet.');
    return h(
      'table',
      { class: 'backfills' },
      h(
        'thead',
        {},
        h('tr', {}, ...['Backfill', 'Status', 'Range', 'Progress', 'Created', ''].map((t) => h('th', {}, t))),
      ),
      h('tbody', {}, ...backfills.map(backfillRow)),
    );
  }

  function backfillRow(backfill: BackfillView): HTMLElement {
    const cancellable = backfill.status === 'queued' || backfill.status === 'running';
    return h(
      'tr',
      { 'data-backfill': backfill.id },
      h('td', {}, h('code', {}, backfill.id)),
      h('td', {}, h('span', { class: `state ${backfill.status}`, 'data-testid': 'status' }, backfill.status)),
      h('td', {}, rangeText(backfill)),
      h(
        'td',
        {},
        h(
          'ul',
          { class: 'progress' },
          ...progressLines(backfill).map((line) =>
            h(
              'li',
              { 'data-dataset': line.dataset },
              h('span', { class: 'dataset' }, label('dataset', line.dataset)),
              h('progress', {
                max: Math.max(1, line.windowsTotal),
                value: line.windowsTotal === 0 && backfill.status === 'succeeded' ? 1 : line.windowsDone,
                'aria-label': `${label('dataset', line.dataset)}: ${line.windowsDone} of ${line.windowsTotal} windows`,
              }),
              h('small', {}, line.text),
            ),
          ),
        ),
        backfill.error ? h('p', { class: 'error' }, backfill.error) : null,
      ),
      h('td', {}, formatTime(backfill.createdAt)),
      h(
        'td',
        {},
        cancellable
          ? h(
              'button',
              { type: 'button', class: 'secondary', onclick: () => confirmCancel(backfill) },
              'Cancel',
            )
          : null,
      ),
    );
  }

  function confirmCancel(backfill: BackfillView): void {
    dialog.replaceChildren(
      h(
        'form',
        { method: 'dialog' },
        h(
          'p',
          {},
          `Cancel the backfill ${backfill.id} (${rangeText(backfill)})? A running one stops before its next ` +
            'file; files already written stay in the bucket.',
        ),
        h(
          'div',
          { class: 'actions' },
          h('button', { value: 'cancel-backfill', class: 'danger' }, 'Cancel backfill'),
          h('button', { value: 'keep', class: 'secondary' }, 'Keep it'),
        ),
      ),
    );
    dialog.onclose = () => {
      if (dialog.returnValue !== 'cancel-backfill') return;
      say(`Cancelling ${backfill.id}…`);
      void api()
        .cancelBackfill(id, backfill.id)
        .then(
          (cancelled) => say(`Backfill ${cancelled.id} cancelled.`),
          (error: unknown) => say((error as Error).message, true),
        )
        .then(() => poller.refresh());
    };
    dialog.returnValue = '';
    dialog.showModal();
  }

  function startForm(): HTMLElement {
    const range = defaultRange(Date.now());
    const boxes = datasets.map((dataset) =>
      h('input', {
        type: 'checkbox',
        id: `bf-dataset-${dataset}`,
        name: 'datasets',
        value: dataset,
        checked: true,
      }),
    );
    const entireHistory = h('input', { type: 'checkbox', id: 'bf-entire-history', name: 'entireHistory' });
    // Text, not datetime-local: the browser would show local time, 12-hour in some locales; the page is UTC.
    const from = h('input', {
      type: 'text',
      id: 'bf-from',
      name: 'from',
      autocomplete: 'off',
      placeholder: 'YYYY-MM-DD HH:MM',
      value: range.from,
    });
    const to = h('input', {
      type: 'text',
      id: 'bf-to',
      name: 'to',
      autocomplete: 'off',
      placeholder: 'YYYY-MM-DD HH:MM',
      value: range.to,
    });
    const formError = h('div', { class: 'form-error', role: 'alert' });
    const submit = h('button', { type: 'submit' }, 'Start backfill');
    const form = h(
      'form',
      { class: 'backfill-form', novalidate: true, 'aria-labelledby': 'backfill-form-heading' },
      h('h3', { id: 'backfill-form-heading' }, 'Start a backfill'),
      formError,
      field(
        'datasets',
        'Datasets',
        h(
          'fieldset',
          { id: 'bf-datasets' },
          ...boxes.map((box) => h('label', { class: 'check', for: box.id }, box, ` ${label('dataset', box.value)}`)),
        ),
      ),
      h(
        'div',
        { class: 'field' },
        h(
          'label',
          { class: 'check', for: entireHistory.id },
          entireHistory,
          ' Entire history (everything from the earliest available data; at most once every 30 days)',
        ),
      ),
      h(
        'div',
        { class: 'range' },
        field('from', 'From (UTC)', from),
        field('to', 'To (UTC)', to, 'At most 7 days after From; not in the future.'),
      ),
      h('div', { class: 'actions' }, submit),
    );
    entireHistory.addEventListener('change', () => {
      from.disabled = entireHistory.checked;
      to.disabled = entireHistory.checked;
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void send({
        datasets: boxes.filter((box) => box.checked).map((box) => box.value),
        entireHistory: entireHistory.checked,
        from: from.value,
        to: to.value,
      });
    });

    async function send(input: BackfillFormInput): Promise<void> {
      clearFieldErrors(form, formError);
      const request = backfillRequest(input);
      if (!request.ok) {
        showFieldErrors(form, formError, new ApiError('Check the form.', 0, 'form', request.issues));
        return;
      }
      submit.disabled = true;
      try {
        const created = await api().createBackfill(id, request.body);
        say(`Backfill ${created.id} queued.`);
        submit.disabled = false;
      } catch (error) {
        showFieldErrors(form, formError, error);
        // A key without the write scope cannot start one: say so once, and keep the button off.
        const forbidden = error instanceof ApiError && error.status === 403;
        submit.disabled = forbidden;
        if (forbidden)
          formError.append(h('p', {}, 'Sign in with a key that may manage exports to start one.'));
      }
      await poller.refresh();
    }

    return form;
  }

  placeholder.replaceWith(element);
  void poller.refresh();
  return { element, stop: () => poller.stop() };
}
