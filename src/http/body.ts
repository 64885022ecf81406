// Request bodies as the contract takes them: their media type and charset checked, decompressed when Content-Encoding
// says so (gzip, deflate, br), held to the route's limit counted decompressed, and JSON parsed strictly.
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { AppError, malformedJson, payloadTooLarge } from '../errors';
import { overBudget, type BodyCharge } from './admission';
import type { BodyCodec } from './route';

export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

const unsupportedMediaType = (message: string) => new AppError(415, 'unsupported_media_type', message);

const JSON_MEDIA_TYPE = /^\s*application\/json\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/** A body sent with a request that has one must be JSON in UTF-8 (RFC 8259); there is no other charset here. */
export function checkJsonMediaType(req: IncomingMessage): void {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' || !hasBody(req)) return;
  const contentType = req.headers['content-type'] ?? '';
  if (!JSON_MEDIA_TYPE.test(contentType)) throw unsupportedMediaType('request body must be application/json');
  const charset = CHARSET.exec(contentType)?.[1];
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    throw unsupportedMediaType('request body must be JSON in UTF-8');
  }
}

/** The request's media type, lower case and without parameters, when the codec takes it; else a 415. */
export function codecMediaType(req: IncomingMessage, codec: BodyCodec): string {
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (codec.mediaTypes.includes(mediaType)) return mediaType;
  throw unsupportedMediaType(`request body must be one of ${codec.mediaTypes.join(', ')}`);
}

const DECOMPRESSORS: Record<string, () => Transform> = {
  gzip: zlib.createGunzip,
  deflate: zlib.createInflate,
  br: zlib.createBrotliDecompress,
};

const undecodable = () => new AppError(400, 'malformed_json', 'request body could not be decoded');
// The client went away (or its connection broke) before the body's end: its request, not our failure. The
// contract's code for a body that cannot be read, as express's body parser answered it.
const cutOff = () => new AppError(400, 'malformed_json', 'the request body ended before it was whole');

/** What a body read is held to: the route's limit, and the bytes it is charged against the server's budget. */
export interface BodyBounds {
  limit: number;
  charge?: BodyCharge;
}

/**
 * The body, decompressed, or undefined when there is none. A body over the limit or past the budget of bytes in
 * flight, or one that does not decompress, is refused once the rest of it is read off, so that the connection stays
 * usable.
 */
export function readBody(req: IncomingMessage, bounds: BodyBounds): Promise<Buffer | undefined> {
  if (!hasBody(req)) return Promise.resolve(undefined);
  const encoding = req.headers['content-encoding']?.toLowerCase() ?? 'identity';
  if (encoding === 'identity') return readPlain(req, bounds);
  const decompressor = DECOMPRESSORS[encoding];
  if (!decompressor) return Promise.reject(unsupportedMediaType(`unsupported Content-Encoding "${encoding}"`));
  return readDecompressed(req, decompressor(), bounds);
}

/** Why a body of `size` bytes so far cannot be taken, if it cannot. */
function refusal(size: number, { limit, charge }: BodyBounds): AppError | undefined {
  if (size > limit) return payloadTooLarge();
  if (charge && !charge.grow(size)) return overBudget();
  return undefined;
}

function readPlain(req: IncomingMessage, bounds: BodyBounds): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = Number(req.headers['content-length'] ?? 0) > bounds.limit ? payloadTooLarge() : undefined;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      refused ??= refusal(size, bounds);
      if (!refused) chunks.push(chunk);
    });
    req.on('end', () => (refused ? reject(refused) : resolve(Buffer.concat(chunks, size))));
    req.on('error', () => reject(cutOff()));
  });
}

function readDecompressed(req: IncomingMessage, decompressor: Transform, bounds: BodyBounds): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (error: AppError) => {
      if (failed) return;
      failed = true;
      req.unpipe(decompressor);
      decompressor.destroy();
      if (req.readableEnded) reject(error);
      else req.on('end', () => reject(error)).resume();
    };
    decompressor.on('data', (chunk: Buffer) => {
      size += chunk.length;
      const refused = refusal(size, bounds);
      if (refused) fail(refused);
      else if (!failed) chunks.push(chunk);
    });
    decompressor.on('error', () => fail(undecodable()));
    decompressor.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', () => {
      decompressor.destroy();
      reject(cutOff());
    });
    req.pipe(decompressor);
  });
}

/**
 * A JSON body's text. Bytes that are not UTF-8 make the body malformed (RFC 8259 §8.1), rather than being stored as
 * U+FFFD, which is what a lenient decoding would do.
 */
export function utf8Text(body: Buffer): string {
  if (!isUtf8(body)) throw malformedJson('request body is not valid UTF-8');
  return body.toString('utf8');
}

/** As express.json() in strict mode did: an empty body is `{}`, and only an object or an array is JSON here. */
export function parseJson(body: Buffer | undefined): unknown {
  if (body === undefined) return undefined;
  let text = utf8Text(body);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.length === 0) return {};
  // JSON's whitespace (RFC 8259) before the first character.
  const first = /^[ \t\n\r]*(.)/s.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw malformedJson();
  try {
    return JSON.parse(text);
  } catch {
    throw malformedJson();
  }
}
