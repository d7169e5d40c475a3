// What an upload is to the images area: the limits, and a file as the multipart parser
// (lib/http/image-upload-parser.ts) leaves it, on disk in the request's temporary directory.
import path from 'node:path';

export const MAX_FILE_BYTES = 10 * 1024 * 1024;
export const MAX_IMAGES_PER_PRODUCT = 5;

export interface IncomingFile {
  path: string;
  originalName: string;
  size: number;
}

/** Where requests stream their files before the service accepts them (one directory per request). */
export const uploadTmpRoot = (uploadDir: string) => path.join(uploadDir, 'tmp');
