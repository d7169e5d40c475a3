// The baseline of the catalogue benchmark: a bare Koa app answering a small JSON body, nothing else
// (no router, no logging, no database). Started as a child process on PORT; prints "listening <port>".
import Koa from 'koa';

const app = new Koa();
app.use(async function hello(ctx) {
  ctx.body = { hello: 'world' };
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
