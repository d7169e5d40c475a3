// Test harness: each test file gets its own database (a fresh MariaDB database, or its own SQLite file),
// migrated once, and a real server on port 0 built exactly as `npm start` builds it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger, type Logger } from '../../lib/logger';
import { startService, type RunningService, type StartServiceOptions } from '../../lib/server';
import { buildServedDocument } from '../../routes/docs';
import { createContract, type Contract } from './contract';

export type DbKind = 'sqlite' | 'mysql';
export const DB_KIND: DbKind = process.env.TEST_DB === 'mysql' ? 'mysql' : 'sqlite';
export const MYSQL_SERVER_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

export interface TestDatabase {
  env: Record<string, string>;
  dataDir: string;
  drop(): Promise<void>;
}

/** A new, empty database of the kind under test, with a temp DATA_DIR for files. */
export async function createTestDatabase(kind: DbKind = DB_KIND): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mkt-test-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (kind === 'sqlite') {
    return { env: { DATA_DIR: dataDir }, dataDir, drop: async () => removeDir() };
  }
  const name = `mkt_test_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = knexFactory({ client: 'mysql2', connection: MYSQL_SERVER_URL });
  try {
    await admin.raw(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await admin.destroy();
  }
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: `${MYSQL_SERVER_URL.replace(/\/$/, '')}/${name}` },
    dataDir,
    drop: async () => {
      const conn = knexFactory({ client: 'mysql2', connection: MYSQL_SERVER_URL });
      try {
        // MariaDB can refuse with "Directory not empty" (ER_DB_DROP_RMDIR, 1010) while it still closes the
        // files of a busy database: try again a little later; a database that stays is only litter, not a failure.
        for (let attempt = 1; ; attempt++) {
          try {
            await conn.raw(`DROP DATABASE IF EXISTS \`${name}\``);
            break;
          } catch (err) {
            if ((err as { errno?: number }).errno !== 1010) throw err;
            if (attempt >= 5) {
              console.warn(`could not drop test database ${name}: ${(err as Error).message}`);
              break;
            }
            await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
          }
        }
      } finally {
        await conn.destroy();
        removeDir();
      }
    },
  };
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    BCRYPT_COST: '4',
    LOG_LEVEL: 'fatal',
    SEED_ON_START: 'false',
    ACTOR_IDLE_MS: '60000',
    // Pruning and expiry sweeps only after their full interval, so no pass deletes or expires what a test is
    // looking at unless the test sets a short interval (or this) itself.
    MAINTENANCE_FIRST_PASS_SECONDS: 'off',
    ...env,
  });
}

/** Collects log lines in memory (for log format and redaction tests). */
export class LogCollector {
  lines: string[] = [];
  write(chunk: string): void {
    this.lines.push(...chunk.split('\n').filter(Boolean));
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  token?: string;
  headers?: Record<string, string>;
  /** Raw body (sent as-is, no JSON encoding). */
  raw?: string | Buffer | FormData;
}

export interface TestApp extends RunningService {
  config: Config;
  logger: Logger;
  logs: LogCollector;
  database: TestDatabase;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export async function request<T = any>(
  baseUrl: string,
  method: string,
  urlPath: string,
  options: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | FormData | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] ??= 'application/json';
  }
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  const res = await fetch(baseUrl + urlPath, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Reuse an existing database instead of creating one (e.g. two app instances on one database). */
  database?: TestDatabase;
  logLevel?: Config['log']['level'];
  /** What `startService` is given besides the config (e.g. a stand-in for the SQLite checkpoint worker). */
  service?: StartServiceOptions;
}

// The route table is the same for every app of a process, so one contract (and its compiled schemas) serves all.
let contract: Contract | undefined;

/**
 * The contract test: every response a test receives through `TestApp.request` is held against the served
 * OpenAPI document; a response the document does not describe fails the request (and so the test).
 */
function checkContract(service: RunningService, method: string, urlPath: string, res: ApiResponse): void {
  contract ??= createContract(buildServedDocument(service.bundle.routes));
  const problems = contract.problems(method, urlPath, res);
  if (problems.length > 0) {
    throw new Error(`Response does not match the OpenAPI document:\n  ${problems.join('\n  ')}`);
  }
}

/** Starts the real service on port 0 against a fresh database. */
export async function startTestApp(options: StartOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const config = testConfig({
    ...database.env,
    ...(options.logLevel ? { LOG_LEVEL: options.logLevel } : {}),
    ...options.env,
  });
  const logs = new LogCollector();
  const logger = createLogger({ level: config.log.level, format: config.log.format, out: logs });
  const service = await startService(config, logger, options.service);
  const ownsDatabase = !options.database;
  return {
    ...service,
    config,
    logger,
    logs,
    database,
    async request(method, urlPath, requestOptions) {
      const res = await request(service.url, method, urlPath, requestOptions);
      // A 500 is always a bug: what the service logged goes to the test's output, so a CI failure says why.
      if (res.status === 500) {
        process.stderr.write(
          `[harness] 500 on ${method} ${urlPath}; the service's last log lines:\n${logs.lines.slice(-5).join('\n')}\n`,
        );
      }
      checkContract(service, method, urlPath, res);
      return res;
    },
    async close() {
      await service.shutdown();
      if (ownsDatabase) await database.drop();
    },
  };
}
