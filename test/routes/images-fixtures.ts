// Shared by the image tests: real image bytes (by magic number), multipart forms, and what is on disk.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TestApp } from '../helpers/harness';

/** Small files whose first bytes are a real JPEG / PNG / GIF signature, followed by random bytes. */
export function imageBytes(kind: 'jpeg' | 'png' | 'gif', size = 2048): Buffer {
  const head = {
    jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46]),
    png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    gif: Buffer.from('GIF89a', 'latin1'),
  }[kind];
  return Buffer.concat([head, crypto.randomBytes(Math.max(0, size - head.length))]);
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
