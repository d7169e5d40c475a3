// Every accepted upload is decoded and re-encoded with sharp (libvips) before it is stored: what we serve
// is pixels we produced, never the client's bytes. Metadata (EXIF with GPS position, XMP, ICC, comments)
// is dropped (sharp writes none unless asked), the EXIF orientation is applied to the pixels first so the
// picture still looks the same, and anything appended to or hidden in the file (a GIF/JS polyglot's
// script, trailing archives) does not survive. Undecodable files and decompression bombs (a pixel count,
// all frames together, over UPLOAD_MAX_PIXELS) are refused before any pixel is decoded.
import fs from 'node:fs/promises';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { BadRequestError } from '../errors';
import type { ImageFormat } from './image-files';

export interface ProcessedImage {
  path: string;
  bytes: number;
}

function encoder(image: Sharp, format: ImageFormat): Sharp {
  switch (format) {
    case 'jpeg':
      return image.jpeg({ quality: 90 });
    case 'png':
      return image.png();
    case 'gif':
      return image.gif();
  }
}

/**
 * Re-encodes `inputPath` (already sniffed as `format`) into `outputPath` in the same format.
 * `label` names the file in error messages (the client's base name).
 */
export async function reencodeImage(
  inputPath: string,
  outputPath: string,
  format: ImageFormat,
  options: { maxPixels: number; label: string },
): Promise<ProcessedImage> {
  const undecodable = () =>
    new BadRequestError('INVALID_FILE_TYPE', `"${options.label}" is not a readable ${format} image`);
  let metadata: Metadata;
  try {
    // Reads the header only: the dimensions are known before anything is decoded.
    metadata = await sharp(inputPath).metadata();
  } catch {
    throw undecodable();
  }
  if (metadata.format !== format || !metadata.width || !metadata.height) throw undecodable();
  const frames = metadata.pages ?? 1;
  const pixels = metadata.width * (metadata.pageHeight ?? metadata.height) * frames;
  if (pixels > options.maxPixels) {
    throw new BadRequestError(
      'IMAGE_LIMIT_EXCEEDED',
      `"${options.label}" has ${pixels} pixels${frames > 1 ? ` in ${frames} frames` : ''}; at most ${options.maxPixels} are accepted`,
    );
  }
  let encoded: Buffer;
  try {
    const decoder = sharp(inputPath, {
      animated: format === 'gif',
      limitInputPixels: options.maxPixels, // libvips' own guard, should a header lie
      failOn: 'error', // truncated or corrupt data is refused, not half-decoded
    });
    // Orientation applied to the pixels, since the EXIF that carried it is dropped (GIFs have none).
    const oriented = format === 'gif' ? decoder : decoder.rotate();
    encoded = await encoder(oriented, format).toBuffer();
  } catch {
    throw undecodable();
  }
  // Written apart from the decoding: a disk that is full or unwritable is our fault, not an undecodable file.
  await fs.writeFile(outputPath, encoded);
  return { path: outputPath, bytes: encoded.length };
}
