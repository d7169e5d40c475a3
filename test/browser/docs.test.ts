// In a real browser (Debian's Chromium via playwright-core): Swagger UI at /docs loads from this server alone,
// lists every operation of the OpenAPI document and can call the API with a Bearer token it remembers;
// /docs/order-lifecycle draws one node per order status. Screenshots go to test-output/browser/.
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { ORDER_STATUSES } from '../../actors/order-lifecycle-machine';
import type { OpenApiDocument } from '../../lib/openapi/openapi-document';
import { createMember, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { launchChromium, screenshotPath } from './browser';

let app: TestApp;
let browser: Browser;
let doc: OpenApiDocument;
let buyer: TestMember;
test.before(async () => {
  app = await startTestApp();
  browser = await launchChromium();
  doc = (await app.request('GET', '/api/v1/openapi.json')).body;
  buyer = await createMember(app, 'BUYER');
});
test.after.always(async () => {
  await browser?.close();
  await app?.close();
});

/** A page that records every URL it requests, to prove nothing is loaded from elsewhere (no CDN). */
async function openPage(path: string): Promise<{ page: Page; requested: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // Generous: the machine's two cores are shared with the rest of the suite while Swagger UI renders.
  page.setDefaultTimeout(60_000);
  const requested: string[] = [];
  page.on('request', (req) => requested.push(req.url()));
  const res = await page.goto(app.url + path, { waitUntil: 'load' });
  if (!res || res.status() !== 200) throw new Error(`${path} answered ${res?.status()}`);
  return { page, requested };
}

function documentedOperations(): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
  );
}

test('/docs loads Swagger UI from this server only and lists every endpoint of the OpenAPI document', async (t) => {
  const { page, requested } = await openPage('/docs');
  try {
    const expected = documentedOperations();
    // A locator, not waitForFunction: a string predicate is an eval on every poll, which the page's CSP forbids
    // (it passed only when the list was complete at the first check).
    await page
      .locator('.opblock')
      .nth(expected.length - 1)
      .waitFor({ timeout: 60_000 });
    const methods = await page.locator('.opblock .opblock-summary-method').allInnerTexts();
    const paths = await page
      .locator('.opblock .opblock-summary-path')
      .evaluateAll((elements) => elements.map((e) => e.getAttribute('data-path')));
    const listed = methods.map((m, i) => `${m.trim().toUpperCase()} ${paths[i]}`);
    // An operation with several tags is listed under each of them: compare the distinct operations.
    t.deepEqual([...new Set(listed)].sort(), [...expected].sort());
    t.is(
      await page
        .locator('.info .title')
        .first()
        .innerText()
        .then((s) => s.includes('Marketplace API')),
      true,
    );
    await page.screenshot({ path: screenshotPath('swagger-ui'), fullPage: false });
    const foreign = requested.filter((url) => !url.startsWith(app.url) && !url.startsWith('data:'));
    t.deepEqual(foreign, [], 'every request goes to this server');
    t.true(requested.includes(`${app.url}/api/v1/openapi.json`));
    t.true(requested.includes(`${app.url}/docs/assets/swagger-ui-bundle.js`));
  } finally {
    await page.close();
  }
});

test('/docs: a Bearer token entered under Authorize is sent by "Try it out" and kept across a reload', async (t) => {
  const { page } = await openPage('/docs');
  try {
    await page.locator('.auth-wrapper .authorize').click();
    await page.locator('.modal-ux input').first().fill(buyer.token);
    await page.locator('.modal-ux .auth-btn-wrapper .authorize').click();
    await page.locator('.modal-ux .btn-done').click();

    const op = page.locator('#operations-Members-getMembersMe');
    await op.locator('.opblock-summary').click();
    await op.locator('.try-out__btn').click();
    await op.locator('.execute').click();
    const status = op.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 60_000 });
    t.is((await status.innerText()).trim(), '200');
    t.true((await op.locator('.live-responses-table .microlight').first().innerText()).includes(buyer.email));
    await page.screenshot({ path: screenshotPath('swagger-ui-try-it-out'), fullPage: false });

    // persistAuthorization: the token survives a reload (kept in localStorage, the lock shows it).
    await page.reload({ waitUntil: 'load' });
    await page.locator('.auth-wrapper .authorize.locked').waitFor({ timeout: 60_000 });
    const stored = String(await page.evaluate('localStorage.getItem("authorized")'));
    t.true(stored.includes('bearerAuth'));
    t.true(stored.includes(buyer.token));
  } finally {
    await page.close();
  }
});

test('/docs/order-lifecycle shows one node per order status, the transitions and the legend', async (t) => {
  const { page, requested } = await openPage('/docs/order-lifecycle');
  try {
    const nodes = page.locator('.diagram svg g.node.state');
    t.is(await nodes.count(), ORDER_STATUSES.length);
    const names = (await nodes.locator('text').allTextContents()).filter((s) =>
      (ORDER_STATUSES as readonly string[]).includes(s.trim()),
    );
    t.deepEqual(names.map((s) => s.trim()).sort(), [...ORDER_STATUSES].sort());
    t.is(await page.locator('.diagram svg g.edge.transition.role-SELLER').count(), 3);
    t.is(await page.locator('.diagram svg g.edge.transition.role-BUYER').count(), 2);
    // One legend: the SVG's own (the page no longer repeats it as a list).
    t.true(await page.locator('.diagram svg #legend').isVisible());
    t.is(await page.getByText('Legend', { exact: true }).count(), 1);
    const box = await page.locator('.diagram svg').boundingBox();
    t.true(!!box && box.width > 300 && box.height > 100, `the diagram is drawn (${JSON.stringify(box)})`);
    await page.screenshot({ path: screenshotPath('order-lifecycle'), fullPage: true });
    t.deepEqual(
      requested.filter((url) => !url.startsWith(app.url)),
      [],
    );
  } finally {
    await page.close();
  }
});
