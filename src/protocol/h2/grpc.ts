// Interim: replaced by the h2-classify branch (same exports).
export const GrpcStatus = { OK: 0, CANCELLED: 1, UNKNOWN: 2, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, ABORTED: 10, OUT_OF_RANGE: 11, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14, DATA_LOSS: 15, UNAUTHENTICATED: 16 } as const;
const NAMES = Object.keys(GrpcStatus);
export function grpcStatusName(code: number): string {
  return NAMES[code] ?? String(code);
}
export function isGrpcContentType(ct: string | string[] | undefined): boolean {
  const v = Array.isArray(ct) ? ct[0] : ct;
  return v !== undefined && v.startsWith('application/grpc') && !v.startsWith('application/grpc-web');
}
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };
export function parseGrpcTimeout(v: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(v);
  return m === null ? undefined : Number(m[1]) * (UNIT_MS[m[2] as string] as number);
}
export function formatGrpcTimeout(ms: number): string {
  const t = Math.max(0, ms);
  if (t * 1000 < 1e8) return `${Math.ceil(t * 1000)}u`;
  if (t < 1e8) return `${Math.ceil(t)}m`;
  return `${Math.min(99_999_999, Math.ceil(t / 1000))}S`;
}
export function readGrpcStatus(h: Record<string, unknown> | undefined): number | undefined {
  const v = h?.['grpc-status'];
  const s = typeof v === 'string' ? v : undefined;
  if (s === undefined || !/^\d+$/.test(s)) return undefined;
  return Number(s);
}
export function encodeGrpcMessage(msg: string): string {
  let out = '';
  for (const b of Buffer.from(msg, 'utf8')) out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}
export function grpcErrorHeaders(status: number, message: string): Record<string, string | number> {
  return { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status), 'grpc-message': encodeGrpcMessage(message) };
}
