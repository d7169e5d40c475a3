// What an acceptable image file is: an allowed extension AND content whose first bytes say the same
// format. The client's Content-Type and file name are never trusted beyond the extension check.
import fs from 'node:fs/promises';
import path from 'node:path';

export type ImageFormat = 'jpeg' | 'png' | 'gif';

/** Allowed extensions (lower case) and the format each one promises. */
export const EXTENSION_FORMATS: Readonly<Record<string, ImageFormat>> = {
  jpg: 'jpeg',
  jpeg: 'jpeg',
  png: 'png',
  gif: 'gif',
};

export const CONTENT_TYPES: Readonly<Record<ImageFormat, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
};

/** The only file names ever stored or served: `<uuid>.<ext>`. */
export const STORED_NAME = /^[0-9a-f-]{36}\.(jpg|jpeg|png|gif)$/;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const SNIFF_BYTES = 8;

/** The format named by the first bytes of a file, or null when it is none of ours. */
export function sniffFormat(head: Buffer): ImageFormat | null {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (head.length >= 8 && head.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (head.length >= 6) {
    const text = head.subarray(0, 6).toString('latin1');
    if (text === 'GIF87a' || text === 'GIF89a') return 'gif';
  }
  return null;
}

/** The lower-case extension of a client file name when it is on the allow-list, else null. */
export function allowedExtension(originalName: string): string | null {
  const ext = path.extname(originalName).slice(1).toLowerCase();
  return Object.hasOwn(EXTENSION_FORMATS, ext) ? ext : null;
}

/** Reads only the first bytes of a stored file (never the whole file) and sniffs its format. */
export async function sniffFile(filePath: string): Promise<ImageFormat | null> {
  const handle = await fs.open(filePath, 'r');
  try {
    const head = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
    return sniffFormat(head.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

export function contentTypeOf(storedName: string): string {
  return CONTENT_TYPES[EXTENSION_FORMATS[path.extname(storedName).slice(1)]];
}
