/** What the console's forms share: a labelled field with its error slot, and the API's errors shown in place. */
import { ApiError } from './api.js';
import { h } from './dom.js';

/** An error as a paragraph a screen reader announces. */
export function notice(error: unknown): HTMLElement {
  const message = error instanceof Error ? error.message : String(error);
  return h('p', { class: 'error', role: 'alert' }, message);
}

/** A field named as the API's body field `name`: label, control, hint, and the slot its issues go to. */
export function field(name: string, label: string, control: HTMLElement, hint?: string): HTMLElement {
  return h(
    'div',
    { class: 'field', 'data-field': name },
    h('label', { for: control.id }, label),
    control,
    hint ? h('small', {}, hint) : null,
    h('p', { class: 'field-error', id: `e-${name}`, role: 'alert' }),
  );
}

/** Empties the field errors of `form` and its form-level error. */
export function clearFieldErrors(form: HTMLElement, formError: HTMLElement): void {
  for (const element of form.querySelectorAll('.field-error')) element.textContent = '';
  for (const element of form.querySelectorAll('.field.invalid')) element.classList.remove('invalid');
  formError.replaceChildren();
}

/**
 * Shows an error of the API (or the form's own check, as an {@link ApiError} with issues): each issue beside
 * the field its path starts with (`datasets[1]` → `datasets`), the rest and the message in `formError`.
 */
export function showFieldErrors(form: HTMLElement, formError: HTMLElement, error: unknown): void {
  const unplaced: string[] = [];
  const issues = error instanceof ApiError ? error.issues : [];
  for (const issue of issues) {
    const name = issue.path.split(/[.[]/)[0] ?? '';
    const slot = form.querySelector<HTMLElement>(`[data-field="${CSS.escape(name)}"] > .field-error`);
    if (slot) {
      slot.textContent = slot.textContent ? `${slot.textContent} ${issue.message}` : issue.message;
      slot.closest('.field')?.classList.add('invalid');
    } else unplaced.push(`${issue.path}: ${issue.message}`);
  }
  const allPlaced = issues.length > 0 && unplaced.length === 0;
  formError.replaceChildren(
    allPlaced ? h('p', { class: 'error' }, 'Check the fields marked below.') : notice(error),
    ...(unplaced.length > 0 ? [h('ul', {}, ...unplaced.map((line) => h('li', {}, line)))] : []),
  );
}
