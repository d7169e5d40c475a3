// Shared by the image tests: real image bytes (by magic number), multipart forms, and what is on disk.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { TestApp } from '../helpers/harness';

export type ImageKind = 'jpeg' | 'png' | 'gif';
export const IMAGE_SIZE = { width: 6, height: 4 };

/** A real, decodable 6x4 image of each format (made once). */
const REAL_IMAGES: Record<ImageKind, Buffer> = Object.fromEntries(
  await Promise.all(
    (['jpeg', 'png', 'gif'] as const).map(async (kind) => [
      kind,
      await sharp({ create: { ...IMAGE_SIZE, channels: 3, background: '#3a7' } })
        [kind]()
        .toBuffer(),
    ]),
  ),
) as Record<ImageKind, Buffer>;

/**
 * A real JPEG / PNG / GIF of exactly `size` bytes: a small decodable image followed by random bytes
 * (decoders ignore what follows the end of the image; every call is unique). The service re-encodes it,
 * so the stored file is the small image without the padding.
 */
export function imageBytes(kind: ImageKind, size = 2048): Buffer {
  const image = REAL_IMAGES[kind];
  return Buffer.concat([image, crypto.randomBytes(Math.max(0, size - image.length))]);
}

/** The format and dimensions of stored bytes, as a decoder sees them, and whether metadata survived. */
export async function decoded(data: Buffer) {
  const meta = await sharp(data).metadata();
  return { format: meta.format, width: meta.width, height: meta.height, exif: meta.exif !== undefined };
}

export interface FormFile {
  name: string;
  data: Buffer;
  field?: string;
  type?: string;
}

export function imageForm(files: FormFile[]): FormData {
  const form = new FormData();
  for (const file of files) {
    form.append(
      file.field ?? 'images',
      new Blob([file.data], { type: file.type ?? 'application/octet-stream' }),
      file.name,
    );
  }
  return form;
}

export function upload(app: TestApp, productId: number, token: string | undefined, files: FormFile[]) {
  return app.request('POST', `/api/v1/products/${productId}/images`, { token, raw: imageForm(files) });
}

/** Every file under a directory (recursively), relative to it; [] when the directory does not exist. */
export function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .filter((entry) => fs.statSync(path.join(dir, entry)).isFile())
    .sort();
}

export const productDir = (app: TestApp, productId: number) =>
  path.join(app.config.uploadDir, 'products', String(productId));
export const tmpFiles = (app: TestApp) => filesUnder(path.join(app.config.uploadDir, 'tmp'));

export async function imageRows(app: TestApp, productId: number) {
  return app
    .db('product_images')
    .where('product_id', productId)
    .orderBy([{ column: 'display_order' }, { column: 'id' }]);
}

export const UUID_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(jpg|jpeg|png|gif)$/;

export interface ServiceProcess {
  url: string;
  /** What the process has written so far (its log lines). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * The real service (`lib/server.ts`, as `npm start` runs it) in a child process on the same database and
 * DATA_DIR as `app`: a truly separate process, with its own per-product locks and its own event loop.
 */
export async function startSecondProcess(app: TestApp): Promise<ServiceProcess> {
  const root = path.resolve(import.meta.dirname, '../..');
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      ...app.database.env,
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      BCRYPT_COST: '4',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'line',
      SEED_ON_START: 'false',
      MIGRATE_ON_START: 'false',
      UPLOAD_DIR: app.config.uploadDir,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`second process did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Listening on [^:\s]+:(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`second process exited with ${code}:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
