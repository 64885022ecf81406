// The pieces of the dashboard's forms: a labelled field, a select's options, a one-line form, a confirmed action.
import type { ComponentChildren, InputHTMLAttributes } from 'preact';
import { ErrorNote } from './ui';

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

/** A field whose input holds what is typed: `onValue` hears every keystroke. */
export function TextField({
  label,
  value,
  onValue,
  ...input
}: { label: string; value: string; onValue: (value: string) => void } & Omit<
  InputHTMLAttributes<HTMLInputElement>,
  'label' | 'value' | 'onInput'
>) {
  return (
    <Field label={label}>
      <input {...input} value={value} onInput={(event) => onValue(event.currentTarget.value)} />
    </Field>
  );
}

/** A choice of a select: a value that reads as itself, or a value with the label it reads as. */
export type Choice<Value extends string | number = string | number> = Value | { value: Value; label: string };

const valueOf = <Value extends string | number>(choice: Choice<Value>): Value =>
  typeof choice === 'object' ? choice.value : choice;

export function Options({ choices }: { choices: readonly Choice[] }) {
  return (
    <>
      {choices.map((choice) => {
        const value = valueOf(choice);
        const label = typeof choice === 'object' ? choice.label : String(choice);
        return (
          <option key={value} value={value}>
            {label}
          </option>
        );
      })}
    </>
  );
}

/** A field that picks one of the choices: `onValue` hears the value picked, of the choices' own type. */
export function SelectField<Value extends string | number>({
  label,
  value,
  choices,
  onValue,
}: {
  label: string;
  value: Value;
  choices: readonly Choice<Value>[];
  onValue: (value: Value) => void;
}) {
  const picked = (text: string) => choices.map(valueOf).find((choice) => String(choice) === text)!;
  return (
    <Field label={label}>
      <select value={value} onChange={(event) => onValue(picked(event.currentTarget.value))}>
        <Options choices={choices} />
      </select>
    </Field>
  );
}

/** A form on one line in a panel: its fields, the submit button, and the error of the page's last action under it. */
export function InlineForm({
  submit,
  onSubmit,
  error,
  children,
}: {
  submit: string;
  onSubmit: () => unknown;
  error: Error | undefined;
  children: ComponentChildren;
}) {
  return (
    <>
      <form
        class="panel inline"
        onSubmit={(event) => {
          event.preventDefault();
          onSubmit();
        }}
      >
        {children}
        <button type="submit" class="primary">
          {submit}
        </button>
      </form>
      {error && <ErrorNote error={error} />}
    </>
  );
}

/** A button for what cannot be undone: it acts once the user has said yes to the question. */
export function ConfirmButton({
  question,
  onConfirm,
  children,
}: {
  question: string;
  onConfirm: () => unknown;
  children: ComponentChildren;
}) {
  return (
    <button type="button" class="danger" onClick={() => confirm(question) && onConfirm()}>
      {children}
    </button>
  );
}
