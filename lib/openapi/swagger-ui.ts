// Swagger UI served from the installed swagger-ui-dist package (no CDN): the page at /docs loads its assets from
// /docs/assets/* and the document from /api/v1/openapi.json. `persistAuthorization` keeps the Bearer token that
// a reader enters under "Authorize" across reloads.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const DIST_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The files of swagger-ui-dist the page needs, and nothing else of node_modules. */
export const SWAGGER_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-16x16.png': 'image/png',
  'favicon-32x32.png': 'image/png',
};

export interface SwaggerAsset {
  stream: fs.ReadStream;
  contentType: string;
  size: number;
}

/** An allow-listed asset of swagger-ui-dist, or null for any other name. */
export function swaggerAsset(file: string): SwaggerAsset | null {
  const contentType = Object.hasOwn(SWAGGER_ASSETS, file) ? SWAGGER_ASSETS[file] : undefined;
  if (!contentType) return null;
  const fullPath = path.join(DIST_DIR, file);
  return { stream: fs.createReadStream(fullPath), contentType, size: fs.statSync(fullPath).size };
}

// The page's one inline script is constant (its settings travel in a JSON data block, which never runs), so the
// docs' Content-Security-Policy can allow exactly this script by its hash.
const INLINE_SCRIPT = `
    const config = JSON.parse(document.getElementById('swagger-config').textContent);
    window.ui = SwaggerUIBundle({ ...config, presets: [SwaggerUIBundle.presets.apis], layout: 'BaseLayout' });
  `;
export const SWAGGER_INLINE_SCRIPT_HASH = `sha256-${crypto.createHash('sha256').update(INLINE_SCRIPT).digest('base64')}`;

export function swaggerUiHtml(options: { specUrl: string; assetsPath: string; title: string }): string {
  const config = {
    url: options.specUrl,
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: true,
    displayRequestDuration: true,
    validatorUrl: null, // no call to an online validator
  };
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${options.title}</title>
  <link rel="stylesheet" href="${options.assetsPath}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${options.assetsPath}/favicon-32x32.png" sizes="32x32">
  <style>body { margin: 0; } .docs-links { font: 14px sans-serif; padding: 8px 20px; background: #1b1b1b; }
  .docs-links a { color: #9fd3ff; margin-right: 16px; }</style>
</head>
<body>
  <nav class="docs-links"><a href="/docs/order-lifecycle">Order lifecycle diagram</a><a href="${options.specUrl}">OpenAPI document (JSON)</a></nav>
  <div id="swagger-ui"></div>
  <script id="swagger-config" type="application/json">${JSON.stringify(config).replace(/</g, '\\u003c')}</script>
  <script src="${options.assetsPath}/swagger-ui-bundle.js"></script>
  <script>${INLINE_SCRIPT}</script>
</body>
</html>
`;
}
