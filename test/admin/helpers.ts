import { Writable } from 'node:stream';
import { LogRegistry } from '../../src/core/log.js';
import { Admin, type AdminOptions } from '../../src/admin/index.js';

/** A log destination keeping every JSON line in memory. */
export class MemoryLog extends Writable {
  readonly lines: Record<string, unknown>[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    done();
  }
}

/** A quiet log registry for tests (nothing reaches stdout). */
export function quietLogs(): { logs: LogRegistry; sink: MemoryLog } {
  const sink = new MemoryLog();
  return { logs: new LogRegistry({ destination: sink }), sink };
}

/** Starts an admin interface on 127.0.0.1:0; the caller closes it. */
export async function startAdmin(options: AdminOptions = {}): Promise<Admin> {
  const { logs } = quietLogs();
  const admin = new Admin({ ip: '127.0.0.1', port: 0, logger: logs.get('prx.admin'), logs, ...options });
  await admin.listen();
  return admin;
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A bounded request: fails the test instead of hanging. */
export async function request(url: string, init: RequestInit = {}, timeoutMs = 5000): Promise<Reply> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** GET with `Accept: application/json`, parsed. */
export async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const reply = await request(url, { headers: { accept: 'application/json' } });
  return { status: reply.status, body: JSON.parse(reply.text) as unknown };
}
