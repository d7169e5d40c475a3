// In a real browser: an order's lifecycle SVG (GET /api/v1/orders/:orderId/lifecycle, with the buyer's token)
// renders with its current status highlighted. Screenshot in test-output/browser/.
import test, { type ExecutionContext } from 'ava';
import type { Browser, Page } from 'playwright-core';
import { CURRENT_FILL, VISITED_FILL } from '../../lib/order-diagram/diagram-dot';
import { createMember, createProduct, type TestMember } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { launchChromium, screenshotPath } from './browser';

let app: TestApp;
let browser: Browser;
let seller: TestMember;
let buyer: TestMember;
test.before(async () => {
  app = await startTestApp();
  browser = await launchChromium();
  [seller, buyer] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'BUYER')]);
});
test.after.always(async () => {
  await browser?.close();
  await app?.close();
});

/** No horizontal scrolling: the page cannot be scrolled sideways at all. */
async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    // Runs in the page (this project compiles without the DOM types).
    const win = globalThis as unknown as { scrollTo(x: number, y: number): void; scrollX: number };
    win.scrollTo(10_000, 0);
    const moved = win.scrollX > 0;
    win.scrollTo(0, 0);
    return moved;
  });
}

async function placeAndConfirm(t: ExecutionContext): Promise<number> {
  const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
  const placed = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: {
      orderItems: [{ productId, quantity: 1 }],
      shippingAddress: {
        zipCode: '06236',
        address: '123 Teheran-ro',
        addressDetail: 'Suite 4',
        receiverName: 'Kim Buyer',
        receiverPhone: '010-1234-5678',
      },
    },
  });
  t.is(placed.status, 201);
  const orderId = placed.body.orders[0].id as number;
  const confirmed = await app.request('PATCH', `/api/v1/sellers/orders/${orderId}/status`, {
    token: seller.token,
    body: { status: 'CONFIRMED' },
  });
  t.is(confirmed.status, 200);
  return orderId;
}

test('the SVG fits an 800 px wide viewport without horizontal scrolling and shows its legend', async (t) => {
  const orderId = await placeAndConfirm(t);
  const context = await browser.newContext({
    viewport: { width: 800, height: 600 },
    extraHTTPHeaders: { Authorization: `Bearer ${buyer.token}` },
  });
  try {
    const page = await context.newPage();
    for (const url of [`/api/v1/orders/${orderId}/lifecycle`, '/docs/order-lifecycle']) {
      const res = await page.goto(app.url + url);
      t.is(res?.status(), 200, url);
      const svg = page.locator(url.startsWith('/docs') ? '.diagram svg' : 'svg').first();
      const box = await svg.boundingBox();
      t.true(
        !!box && box.x >= 0 && box.x + box.width <= 800 && box.width > 500,
        `${url}: ${JSON.stringify(box)}`,
      );
      t.false(await scrollsSideways(page), `${url} scrolls sideways`);
      const legend = svg.locator('#legend');
      t.true(await legend.locator('text', { hasText: /^Legend$/ }).isVisible(), url);
      const legendBox = await legend.boundingBox();
      t.true(
        !!legendBox && legendBox.x + legendBox.width <= 800,
        `${url} legend: ${JSON.stringify(legendBox)}`,
      );
      const texts = await legend.locator('text').allTextContents();
      for (const text of [
        "an order's current status",
        'transitions the order took',
        'EVENT [guard] triggered by a SELLER',
      ])
        t.true(texts.includes(text), `${url}: ${text}`);
      // The legend's current-status swatch is the colour the drawing uses for it.
      t.is(await legend.locator('#legend-current rect').getAttribute('fill'), CURRENT_FILL);
      await page.screenshot({
        path: screenshotPath(`order-lifecycle-800-${url.startsWith('/docs') ? 'docs' : 'order'}`),
      });
    }
  } finally {
    await context.close();
  }
});

test('the order SVG highlights the current status and the statuses the order went through', async (t) => {
  const orderId = await placeAndConfirm(t);

  const context = await browser.newContext({
    viewport: { width: 1280, height: 500 },
    extraHTTPHeaders: { Authorization: `Bearer ${buyer.token}` },
  });
  try {
    const page = await context.newPage();
    const res = await page.goto(`${app.url}/api/v1/orders/${orderId}/lifecycle`);
    t.is(res?.status(), 200);
    t.is(res?.headers()['content-type'], 'image/svg+xml; charset=utf-8');

    const current = page.locator('g.node.state.current');
    t.is(await current.count(), 1);
    t.true((await current.locator('text').allTextContents()).includes('CONFIRMED'));
    t.is(await current.locator('path, polygon').first().getAttribute('fill'), CURRENT_FILL);
    const visited = page.locator('g.node.state.visited');
    t.deepEqual(
      (await visited.locator('text').allTextContents()).filter((s) => s === 'PENDING'),
      ['PENDING'],
    );
    t.is(await visited.locator('path, polygon').first().getAttribute('fill'), VISITED_FILL);
    t.is(await page.locator('g.edge.transition.taken').count(), 2); // the start arrow and CONFIRM
    const box = await current.boundingBox();
    t.true(!!box && box.width > 20 && box.height > 10, 'the current status is drawn on screen');
    await page.screenshot({ path: screenshotPath('order-lifecycle-confirmed') });
  } finally {
    await context.close();
  }
});
