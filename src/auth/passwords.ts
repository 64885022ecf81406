// Password hashing with argon2id; a missing user costs the same time as a wrong password.
import argon2 from 'argon2';

const options = { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string): Promise<string> => argon2.hash(password, options);

let dummyHash: Promise<string> | undefined;

/** Verifies against the stored hash, or against a dummy one when there is no user, so both take as long. */
export async function verifyPassword(storedHash: string | undefined, password: string): Promise<boolean> {
  dummyHash ??= hashPassword('runwatch-dummy-password');
  const hash = storedHash ?? (await dummyHash);
  const matches = await argon2.verify(hash, password).catch(() => false);
  return matches && storedHash !== undefined;
}
