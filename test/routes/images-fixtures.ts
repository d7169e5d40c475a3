// Shared by the image tests: real image bytes (by magic number), multipart forms, and what is on disk.
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
