// `cachesStale` (the cluster connection came back: change events may have been missed) drops every cached
// copy: product detail, popular, list counts, categories, and every actor re-reads its product.
import test from 'ava';
import { startTestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct } from '../helpers/factories';

test('after cachesStale every cached copy and every actor reflect the database again', async (t) => {
  const app = await startTestApp();
  try {
    const seller = await createMember(app, 'SELLER');
    const buyer = await createMember(app, 'BUYER');
    const productId = await createProduct(app, seller.id, { price: '10.00', stockQuantity: 5 });
    const order = () =>
      app.request('POST', '/api/v1/orders', {
        token: buyer.token,
        body: {
          orderItems: [{ productId, quantity: 1 }],
          shippingAddress: {
            zipCode: '12345',
            address: '1 Main St',
            addressDetail: 'Apt 1',
            receiverName: 'Bo',
            receiverPhone: '010-1234-5678',
          },
        },
      });
    t.is((await order()).status, 201);
    t.is((await app.request('GET', `/api/v1/products/${productId}`)).body.price, 10);
    const categoriesBefore = (await app.request('GET', '/api/v1/categories')).body as unknown[];
    const popularBefore = await app.request('GET', '/api/v1/products/popular?limit=5');
    t.is(popularBefore.status, 200);

    // Changes made behind this process's back (another instance whose events were missed).
    await app
      .db('products')
      .where('id', productId)
      .update({ price: '11.00', stock_quantity: 50, sales_count: 99 });
    const categoryId = await createCategory(app);
    t.is((await app.request('GET', `/api/v1/products/${productId}`)).body.price, 10);

    await app.bundle.services.events.emit('cachesStale');
    const detail = await app.request('GET', `/api/v1/products/${productId}`);
    t.like(detail.body, { price: 11, stockQuantity: 50, salesCount: 99 });
    const categories = (await app.request('GET', '/api/v1/categories')).body as Array<{ id: number }>;
    t.is(categories.length, categoriesBefore.length + 1);
    t.true(categories.some((category) => category.id === categoryId));
    const popular = await app.request('GET', '/api/v1/products/popular?limit=5');
    t.is(popular.body[0].id, productId);
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.like(app.bundle.services.inventory.inspect(productId), { stock: 50 });
    const placed = await order();
    t.is(placed.status, 201);
    t.is(placed.body.orders[0].items[0].productPrice, 11);
  } finally {
    await app.close();
  }
});
