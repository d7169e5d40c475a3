import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { AppError } from '../../lib/errors';
import { reencodeImage } from '../../lib/images/image-processing';
import { imageBytes } from '../routes/images-fixtures';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'image-processing-'));
test.after.always(() => fs.rmSync(dir, { recursive: true, force: true }));

const input = (name: string, data: Buffer) => {
  const file = path.join(dir, name);
  fs.writeFileSync(file, data);
  return file;
};
const options = { maxPixels: 1_000_000, label: 'a.png' };

test('a decodable image is written re-encoded, and its size is what was written', async (t) => {
  const output = path.join(dir, 'ok.png.clean');
  const result = await reencodeImage(input('ok.png', imageBytes('png')), output, 'png', options);
  t.is(result.path, output);
  t.is(result.bytes, fs.statSync(output).size);
});

test("an undecodable file is the client's fault: 400 INVALID_FILE_TYPE", async (t) => {
  const err = await t.throwsAsync(
    reencodeImage(input('bad.png', Buffer.from('not a png')), path.join(dir, 'bad.clean'), 'png', options),
  );
  t.true(err instanceof AppError);
  t.is((err as AppError).status, 400);
  t.is((err as AppError).code, 'INVALID_FILE_TYPE');
});

test("a file that cannot be written is our fault, not the client's: the file system error, not a 400", async (t) => {
  const output = path.join(dir, 'no-such-directory', 'x.png.clean');
  const err = await t.throwsAsync(
    reencodeImage(input('fine.png', imageBytes('png')), output, 'png', options),
  );
  t.false(err instanceof AppError);
  t.is((err as NodeJS.ErrnoException).code, 'ENOENT');
});
