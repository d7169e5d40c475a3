// The /docs pages under their Content-Security-Policy, in real Chromium: Swagger UI and the lifecycle page work
// with no CSP violation at all, and no other site can frame them (frame-ancestors 'none').
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/harness';
import { launchChromium } from './browser';

let app: TestApp;
let browser: Browser;
test.before(async () => {
  app = await startTestApp();
  browser = await launchChromium();
});
test.after.always(async () => {
  await browser?.close();
  await app?.close();
});

/** Opens `path`, recording every CSP violation the page reports (console and securitypolicyviolation). */
async function open(path: string): Promise<{ page: Page; violations: string[] }> {
  const page = await browser.newPage();
  page.setDefaultTimeout(60_000);
  const violations: string[] = [];
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) violations.push(msg.text());
  });
  await page.exposeFunction('reportViolation', (text: string) => violations.push(text));
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation(e.violatedDirective + ' ' + e.blockedURI));",
  );
  const res = await page.goto(app.url + path, { waitUntil: 'load' });
  if (!res || res.status() !== 200) throw new Error(`${path} answered ${res?.status()}`);
  return { page, violations };
}

test('Swagger UI renders and calls the API under the CSP without a single violation', async (t) => {
  const { page, violations } = await open('/docs');
  try {
    // A locator, not waitForFunction: a string predicate is an eval, which this very CSP forbids.
    await page.locator('.opblock').nth(10).waitFor({ timeout: 60_000 });
    const op = page.locator('#operations-Catalog-getProducts, .opblock-get').first();
    await op.locator('.opblock-summary').click();
    await op.locator('.try-out__btn').click();
    await op.locator('.execute').click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 60_000 });
    t.regex((await status.innerText()).trim(), /^\d{3}$/);
    t.deepEqual(violations, []);
  } finally {
    await page.close();
  }
});

test('the lifecycle page draws its diagram under the CSP without a violation', async (t) => {
  const { page, violations } = await open('/docs/order-lifecycle');
  try {
    t.true((await page.locator('.diagram svg g.node').count()) > 0);
    const box = await page.locator('.diagram svg').boundingBox();
    t.true(!!box && box.width > 300);
    t.deepEqual(violations, []);
  } finally {
    await page.close();
  }
});

test('another site cannot frame the docs (frame-ancestors none)', async (t) => {
  const page = await browser.newPage();
  try {
    // A page of another origin (a data: URL) embedding /docs in an iframe.
    await page.goto(`data:text/html,<iframe id="f" src="${app.url}/docs"></iframe>`);
    await page.waitForTimeout(1500);
    const docsFrame = page.frames().find((f) => f !== page.mainFrame());
    t.truthy(docsFrame, 'the iframe exists');
    const rendered = await docsFrame!
      .evaluate("document.querySelector('#swagger-ui') !== null")
      .catch(() => false);
    t.false(rendered, 'Swagger UI was not rendered inside the frame');
  } finally {
    await page.close();
  }
});
