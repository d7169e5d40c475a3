// Debian's Chromium driven by playwright-core (which ships no browser). A missing Chromium is a failure, never a
// skip: CI installs it (`apt-get install -y chromium`, see .ci/run), and so must a developer.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { DB_KIND } from '../helpers/harness';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];
export const SCREENSHOT_DIR = path.join(import.meta.dirname, '..', '..', 'test-output', 'browser');

export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM_PATH}: install it with "apt-get install -y chromium" (or set CHROMIUM_PATH)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: CHROMIUM_ARGS,
    headless: true,
    timeout: 60_000,
  });
}

/** Where a screenshot goes: test-output/browser/<name>-<db>.png (gitignored). */
export function screenshotPath(name: string): string {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return path.join(SCREENSHOT_DIR, `${name}-${DB_KIND}.png`);
}
