// @koa/router 15 (path-to-regexp 8) paths to OpenAPI paths: `:id` and `*splat` become `{id}` / `{splat}`, and an
// optional group `{/:name}` becomes two documented paths (OpenAPI has no optional path segments).

/** Every concrete path an optional-group path stands for, e.g. `/a{/:b}` -> ['/a/:b', '/a']. */
export function expandOptionalGroups(path: string): string[] {
  const open = path.indexOf('{');
  if (open === -1) return [path];
  let depth = 0;
  let close = -1;
  for (let i = open; i < path.length; i++) {
    if (path[i] === '{') depth++;
    else if (path[i] === '}' && --depth === 0) {
      close = i;
      break;
    }
  }
  if (close === -1) return [path];
  const before = path.slice(0, open);
  const inner = path.slice(open + 1, close);
  const after = path.slice(close + 1);
  const out: string[] = [];
  for (const rest of expandOptionalGroups(after)) {
    for (const middle of expandOptionalGroups(inner)) out.push(before + middle + rest);
    out.push(before + rest);
  }
  return out;
}

const PARAM = /[:*](\w+)/g;

export function toOpenApiPath(routerPath: string): string {
  return routerPath.replace(PARAM, '{$1}');
}

/** Names of the path parameters of a concrete (group-free) router path. */
export function pathParamNames(routerPath: string): string[] {
  return [...routerPath.matchAll(PARAM)].map((m) => m[1]);
}

/** A stable operationId: `get /api/v1/orders/{orderId}/cancel` -> `getOrdersByOrderIdCancel`. */
export function operationId(method: string, openApiPath: string): string {
  const words = openApiPath
    .replace(/^\/api\/v\d+/, '')
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment);
      const word = (param ? param[1] : segment).replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) =>
        c ? c.toUpperCase() : '',
      );
      const cap = word.charAt(0).toUpperCase() + word.slice(1);
      return param ? `By${cap}` : cap;
    });
  return method.toLowerCase() + words.join('');
}
