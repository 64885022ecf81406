// What a new password must not be (NIST SP 800-63B, 3.1.1.2): a commonly used or breached one, one character
// repeated, or the account's own e-mail, its local part or its name. No composition rules. The list is zxcvbn-ts's
// common passwords (@zxcvbn-ts/language-common, ~49,000 from breach corpora, kept up to date by that project);
// only its entries long enough to be a password here are kept, in a Set (~18,000).
import { dictionary } from '@zxcvbn-ts/language-common';

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;

const commonPasswords = new Set(dictionary['passwords-common'].filter((word) => word.length >= MIN_PASSWORD_LENGTH));

// Words of this service's own context, which a guesser tries first.
const CONTEXT_WORDS = ['runwatch', 'runwatch1', 'runwatch123'];

/** Why the password may not be used, or undefined when it may. `email` is normalized (trimmed, lower case). */
export function passwordRefusal(password: string, account: { email: string; name?: string }): string | undefined {
  const lower = password.toLowerCase();
  if (commonPasswords.has(lower) || CONTEXT_WORDS.includes(lower)) return 'is a commonly used password; choose another';
  const characters = [...password];
  if (characters.every((character) => character === characters[0])) return 'must not be one character repeated';
  const localPart = account.email.split('@')[0];
  const own = [account.email, localPart, account.name?.trim().toLowerCase()];
  if (own.includes(lower.trim())) return 'must not be your e-mail address or name';
  return undefined;
}
