// One bunyan root logger. Components get children (`getLogger('OrderService')`); the request id is
// added at write time from AsyncLocalStorage. Output is the spec's line format
// `[timestamp] [level] [requestId] [class] message`, or raw bunyan JSON with LOG_FORMAT=json.
// Secrets (passwords, tokens, Authorization values) are scrubbed from every record.
import bunyan from 'bunyan';
import { safeErrorMessage } from './db-errors';
import { currentRequestId } from './request-context';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
export type LogFormat = 'line' | 'json';
export type Logger = bunyan;

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

const SECRET_KEY = /pass(word)?|token|secret|authorization|cookie|hash/i;
const BUNYAN_FIELDS = new Set([
  'name',
  'hostname',
  'pid',
  'level',
  'msg',
  'time',
  'v',
  'component',
  'requestId',
]);

/**
 * An error as a log record field. Database errors (knex prefixes the SQL with its bound values, which may
 * be a password hash or a token hash) keep only their code and the driver's own message, without values.
 */
export function serializeError(value: unknown): unknown {
  if (!(value instanceof Error)) return value;
  const err = value as Error & { code?: unknown; nativeError?: { code?: unknown } };
  const code = [err.code, err.nativeError?.code].find((c) => typeof c === 'string') as string | undefined;
  const message = safeErrorMessage(err);
  const frames = (err.stack ?? '')
    .split('\n')
    .filter((line) => line.trimStart().startsWith('at '))
    .join('\n');
  return { name: err.name, code, message, stack: `${err.name}: ${message}\n${frames}` };
}

/** Replaces values of secret-looking keys, recursively; leaves everything else as it is. */
export function scrub(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return serializeError(value);
  if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = SECRET_KEY.test(key) ? '[REDACTED]' : scrub(inner, depth + 1);
  }
  return out;
}

export interface LineRecord {
  time: Date | string;
  level: number;
  msg: string;
  component?: string;
  requestId?: string;
  [key: string]: unknown;
}

export function formatLine(record: LineRecord): string {
  const time = record.time instanceof Date ? record.time.toISOString() : record.time;
  const level = LEVEL_NAMES[record.level] ?? String(record.level);
  let line = `[${time}] [${level}] [${record.requestId ?? '-'}] [${record.component ?? 'App'}] ${record.msg}`;
  const err = record.err as { stack?: string; message?: string } | undefined;
  if (err) line += `\n${err.stack ?? err.message}`;
  return line;
}

class ScrubbingStream {
  constructor(
    private readonly format: LogFormat,
    private readonly out: { write(chunk: string): unknown },
  ) {}

  write(object: object): void {
    const record = object as LineRecord;
    const clean: LineRecord = { ...record, requestId: record.requestId ?? currentRequestId() };
    for (const key of Object.keys(clean)) {
      if (BUNYAN_FIELDS.has(key)) continue;
      clean[key] =
        key === 'err' ? scrub(clean[key]) : SECRET_KEY.test(key) ? '[REDACTED]' : scrub(clean[key]);
    }
    this.out.write(this.format === 'json' ? `${JSON.stringify(clean)}\n` : `${formatLine(clean)}\n`);
  }
}

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  /** Where lines go; stdout by default. Tests pass a collector. */
  out?: { write(chunk: string): unknown };
}

export function createLogger(options: LoggerOptions): Logger {
  return bunyan.createLogger({
    name: 'marketplace',
    level: options.level,
    streams: [
      {
        type: 'raw',
        level: options.level,
        stream: new ScrubbingStream(options.format, options.out ?? process.stdout),
      },
    ],
    serializers: { err: serializeError },
  });
}
