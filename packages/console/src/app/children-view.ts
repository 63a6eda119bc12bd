/**
 * The child-organisation picker of the create and edit form: a checkbox per child workspace of the signed-in
 * workspace, and "all current and future children" (`["*"]`). A workspace without children sees why there is
 * nothing to choose instead.
 */
import type { ChildOrganization } from './api.js';
import { h } from './dom.js';
import { field } from './forms.js';
import { formatTime } from './history.js';
import { ALL_CHILDREN, type FormIssue, HELP, label } from './options.js';

/** The picker's field, and the `childOrganizations` it gives (the stored list when nothing can be chosen). */
export interface ChildPicker {
  element: HTMLElement;
  value(): string[];
  /** The picker's own check of a list to send: every organisation ticked is still a child. */
  issues(): FormIssue[];
}

/**
 * The picker for `children` (or the error reading them), `stored` being the export's current list (empty for a
 * new export). Children no longer linked but still in the list stay listed, ticked, so they can be removed.
 */
export function childPicker(children: ChildOrganization[] | Error, stored: readonly string[]): ChildPicker {
  if (children instanceof Error || (children.length === 0 && stored.length === 0)) {
    const text =
      children instanceof Error
        ? `The child organisations could not be read: ${children.message}`
        : 'This workspace has no child organisations: the export holds its own data only.';
    return {
      element: h(
        'div',
        { class: 'field', 'data-field': 'childOrganizations' },
        h('span', { class: 'label' }, 'Child organisations'),
        h('p', { class: children instanceof Error ? 'error' : 'empty', 'data-testid': 'no-children' }, text),
        h('p', { class: 'field-error', id: 'e-childOrganizations', role: 'alert' }),
      ),
      value: () => [...stored],
      issues: () => [],
    };
  }
  const all = h('input', {
    type: 'checkbox',
    name: 'childOrganizations',
    value: ALL_CHILDREN,
    checked: stored.includes(ALL_CHILDREN),
  });
  const linked = new Map(children.map((child) => [child.workspaceId, child]));
  const ids = [...children.map((child) => child.workspaceId)];
  for (const id of stored) if (id !== ALL_CHILDREN && !linked.has(id)) ids.push(id);
  const boxes = ids.map((id) =>
    h('input', { type: 'checkbox', name: 'childOrganizations', value: id, checked: stored.includes(id) }),
  );
  const sync = () => {
    for (const box of boxes) box.disabled = all.checked;
  };
  all.addEventListener('change', sync);
  sync();
  const fieldset = h(
    'fieldset',
    { id: 'f-childOrganizations', class: 'children' },
    h('label', { class: 'check' }, all, ` ${label('childOrganizations', ALL_CHILDREN)}`),
    ...boxes.map((box, index) => {
      const id = ids[index] ?? '';
      const child = linked.get(id);
      return h(
        'label',
        { class: 'check' },
        box,
        ` ${id}`,
        h('small', {}, child ? ` linked ${formatTime(child.linkedAt)}` : ' no longer linked'),
      );
    }),
  );
  const value = () =>
    all.checked ? [ALL_CHILDREN] : boxes.filter((box) => box.checked).map((box) => box.value);
  return {
    element: field('childOrganizations', 'Child organisations', fieldset, HELP.childOrganizations),
    value,
    issues: () =>
      value()
        .filter((id) => id !== ALL_CHILDREN && !linked.has(id))
        .map((id) => ({
          path: 'childOrganizations',
          message: `${id} is no longer a child of this workspace: untick it.`,
        })),
  };
}
