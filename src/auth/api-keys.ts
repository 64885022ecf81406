// The API key format: `rw_` + 40 base62 characters; only its SHA-256 is ever stored.
import { createHash, randomInt } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PATTERN = /^rw_[0-9A-Za-z]{40}$/;

export function generateApiKey(): string {
  let key = 'rw_';
  for (let i = 0; i < 40; i += 1) key += ALPHABET[randomInt(ALPHABET.length)];
  return key;
}

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('hex');
