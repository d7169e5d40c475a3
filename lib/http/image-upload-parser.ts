// The multipart parser of the image upload: @koa/multer with DISK storage, so a file streams into a
// per-request temporary directory under UPLOAD_DIR and is never held in memory as a whole. The directory
// is removed when the request ends, whatever happened, so a failed or rejected upload leaves nothing
// behind; the image service moves accepted files out of it before that. Multer's errors become AppErrors.
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import multer from '@koa/multer';
import type { Context, Middleware } from 'koa';
import {
  AppError,
  BadRequestError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors';
import {
  MAX_FILE_BYTES,
  MAX_IMAGES_PER_PRODUCT,
  uploadTmpRoot,
  type IncomingFile,
} from '../images/image-upload';

/** The multipart field that carries the files. */
export const IMAGES_FIELD = 'images';

interface MulterLikeError extends Error {
  code?: string;
  field?: string;
  syscall?: string;
}

function toAppError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const e = err as MulterLikeError;
  if (e?.name === 'MulterError') {
    switch (e.code) {
      case 'LIMIT_FILE_SIZE':
        return new PayloadTooLargeError(
          'FILE_TOO_LARGE',
          `A file is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB`,
        );
      case 'LIMIT_FILE_COUNT':
        return new BadRequestError(
          'IMAGE_LIMIT_EXCEEDED',
          `At most ${MAX_IMAGES_PER_PRODUCT} images per request`,
        );
      case 'LIMIT_UNEXPECTED_FILE':
        if (e.field === IMAGES_FIELD) {
          return new BadRequestError(
            'IMAGE_LIMIT_EXCEEDED',
            `At most ${MAX_IMAGES_PER_PRODUCT} images per request`,
          );
        }
        return new ValidationError('Unexpected file field', [
          { field: e.field ?? 'file', message: `files must be sent in the field "${IMAGES_FIELD}"` },
        ]);
      default:
        return new ValidationError(`Invalid multipart body: ${e.message}`, [
          { field: 'body', message: e.message },
        ]);
    }
  }
  // File system trouble on our side (disk full, permissions) stays a 500; anything else came from parsing
  // a malformed body (busboy: missing boundary, truncated form).
  if (e?.syscall) return err;
  const why = e?.message ?? 'unreadable';
  return new ValidationError(`Invalid multipart body: ${why}`, [{ field: 'body', message: why }]);
}

/** The largest form there is: five whole files plus the parts' headers and what else fits in the form. */
export const MAX_UPLOAD_BODY_BYTES = MAX_IMAGES_PER_PRODUCT * MAX_FILE_BYTES + 1024 * 1024;

/**
 * A declared Content-Length beyond any acceptable form is 413 at once, before the body is parsed: parsing it
 * would read (and throw away) all of it before answering, so a large upload over a slow link would only ever
 * see the request timeout's 408. The connection stays open (Node reads and drops the rest of the body, within
 * the request timeout): closing it under a client still sending would reset it, and the client would lose the
 * 413 it was sent. A client that sent `Expect: 100-continue` and waits has sent no body: it gets the 413 without a
 * 100 and the connection closes (lib/graceful-server.ts).
 */
function refuseOversizedBody(ctx: Context): void {
  const declared = Number(ctx.get('Content-Length') || 0);
  if (declared <= MAX_UPLOAD_BODY_BYTES) return;
  throw new AppError(
    413,
    'PAYLOAD_TOO_LARGE',
    `An upload is at most ${MAX_IMAGES_PER_PRODUCT} files of ${MAX_FILE_BYTES / 1024 / 1024} MB (${declared} bytes declared)`,
  );
}

/**
 * Route `before` middleware: parses the `images` field to disk, exposes the files to the handler through
 * `incomingFiles(ctx)`, and removes the temporary directory after the handler has run.
 */
export function createImageUploadParser(uploadDir: string): Middleware {
  const tmpRoot = uploadTmpRoot(uploadDir);
  const tmpDirs = new WeakMap<IncomingMessage, string>();
  const upload = multer({
    storage: multer.diskStorage({
      destination: (req, _file, cb) => cb(null, tmpDirs.get(req) as string),
      // Never the client's name on disk: a random one, so `../` in a file name cannot go anywhere.
      filename: (_req, _file, cb) => cb(null, crypto.randomUUID()),
    }),
    limits: {
      fileSize: MAX_FILE_BYTES,
      files: MAX_IMAGES_PER_PRODUCT,
      fields: 10,
      fieldSize: 10 * 1024,
      parts: MAX_IMAGES_PER_PRODUCT + 10,
    },
  }).array(IMAGES_FIELD, MAX_IMAGES_PER_PRODUCT);

  return async function parseImageUpload(ctx, next) {
    // The declared type, not `ctx.is()`: that answers null for an empty body, which is a malformed form (400).
    if (ctx.request.type.trim().toLowerCase() !== 'multipart/form-data') {
      throw new UnsupportedMediaTypeError('Content-Type must be multipart/form-data');
    }
    refuseOversizedBody(ctx);
    const tmpDir = path.join(tmpRoot, crypto.randomUUID());
    await fs.mkdir(tmpDir, { recursive: true });
    tmpDirs.set(ctx.req, tmpDir);
    try {
      try {
        await upload(ctx, async () => {});
      } catch (err) {
        throw toAppError(err);
      }
      checkForm(ctx);
      await next();
    } finally {
      await fs.rm(tmpDir, { recursive: true, force: true });
    }
  };
}

type ParsedFile = { path: string; originalname: string; size: number };

function parsedFiles(ctx: Context): ParsedFile[] {
  const files = (ctx.request as { files?: unknown }).files;
  return Array.isArray(files) ? (files as ParsedFile[]) : [];
}

/**
 * The form is 1-5 files in the `images` field and nothing else: 400 naming every offending field when the
 * files are missing or a text field came along (API.md: request schemas are strict, an unknown field is a 400).
 */
function checkForm(ctx: Context): void {
  const errors = Object.keys((ctx.request as { body?: object }).body ?? {}).map((field) => ({
    field,
    message: field === IMAGES_FIELD ? 'must carry files, not text' : 'unknown field',
  }));
  if (parsedFiles(ctx).length === 0 && !errors.some((error) => error.field === IMAGES_FIELD)) {
    errors.push({
      field: IMAGES_FIELD,
      message: `send 1 to ${MAX_IMAGES_PER_PRODUCT} files in the field "${IMAGES_FIELD}"`,
    });
  }
  if (errors.length > 0) throw new ValidationError('Invalid request body', errors);
}

/** The files the upload parser accepted (1 to 5: the parser answered 400 otherwise). */
export function incomingFiles(ctx: Context): IncomingFile[] {
  return parsedFiles(ctx).map((f) => ({ path: f.path, originalName: f.originalname ?? '', size: f.size }));
}
