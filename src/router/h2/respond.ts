/**
 * How the h2 router answers a failure on a stream, in h2's terms (reference §2.2): a response with
 * `prx-err` where Linkerd gives one (no route, connection failed, bad request context), a reset
 * otherwise; and for gRPC requests a trailers-only response with a real gRPC status instead, so
 * gRPC clients see UNAVAILABLE, DEADLINE_EXCEEDED or RESOURCE_EXHAUSTED rather than a bare reset.
 */
import type { OutgoingHttpHeaders } from 'node:http2';
import type { H2ServerStream } from '../../protocol/h2/wire/server-stream.js';
import type { Dtab } from '../../naming/index.js';
import { H2Code, StreamResetError } from '../../protocol/h2/errors.js';
import { GrpcStatus, grpcErrorHeaders } from '../../protocol/h2/grpc.js';
import { errorHeaderValue, renderError } from '../../protocol/http/headers/error-response.js';
import { InvalidDtabHeaderError, ProxyError, RichConnectionFailedError, RichNoBrokersAvailableError, richRoutingFailure, UnknownDestinationError } from '../../protocol/http/headers/proxy-errors.js';
import { MeshctlDeniedError, MeshctlRedirect } from '../../protocol/http/policies.js';
import { BindingFailedError, FailureFlag, RouterFailure } from '../../service/failures.js';
import { requestDtabFailure } from '../core/binding.js';

/** What a failed stream gets. */
export type H2Answer =
  | { readonly kind: 'response'; readonly status: number; readonly headers: Record<string, string>; readonly body: Buffer }
  | { readonly kind: 'grpc'; readonly status: number; readonly message: string }
  | { readonly kind: 'reset'; readonly code: number };

/** The request a failure happened on, as far as the answer depends on it. */
export interface FailedRequest {
  readonly grpc: boolean;
  readonly dst: string | undefined;
  readonly baseDtab: Dtab;
  readonly localDtab: Dtab | undefined;
}

/** Linkerd's rich texts for the failures that become responses. */
function enriched(err: unknown, r: FailedRequest): unknown {
  const rich = richRoutingFailure(err, { service: r.dst ?? 'unknown', baseDtab: r.baseDtab, localDtab: r.localDtab });
  if (rich !== undefined) return rich;
  const budget = requestDtabFailure(err, r.localDtab);
  if (budget !== undefined) return new InvalidDtabHeaderError(budget.message, { cause: budget });
  return err;
}

/** The answer to a failure of request `r`. */
export function answerFor(err: unknown, r: FailedRequest): H2Answer {
  const e = enriched(err, r);
  // An upstream reset passes through as it is, gRPC or not: the client's library knows what
  // REFUSED_STREAM (safe to retry), CANCEL and INTERNAL_ERROR mean.
  if (e instanceof StreamResetError && e.by === 'upstream') return { kind: 'reset', code: e.h2Code === H2Code.NO_ERROR ? H2Code.INTERNAL_ERROR : e.h2Code };
  // A route rule's redirect, and a mixer's refusal, are answers, not failures: always a response.
  if (e instanceof MeshctlRedirect) return { kind: 'response', status: e.status, headers: { location: e.location, 'content-length': '0' }, body: Buffer.alloc(0) };
  if (e instanceof MeshctlDeniedError) {
    if (r.grpc) return { kind: 'grpc', status: e.grpcCode, message: e.message };
    const rendered = renderError(e);
    return { kind: 'response', status: rendered.status, headers: rendered.headers, body: rendered.body };
  }
  if (r.grpc) return { kind: 'grpc', status: grpcStatusFor(e), message: e instanceof Error ? e.message : String(e) };
  if (e instanceof StreamResetError) return { kind: 'reset', code: e.by === 'upstream' ? e.h2Code : H2Code.CANCEL };
  if (e instanceof UnknownDestinationError) return { kind: 'reset', code: H2Code.REFUSED_STREAM };
  if (e instanceof RichNoBrokersAvailableError || e instanceof RichConnectionFailedError || (e instanceof ProxyError && e.status < 500)) {
    const r = renderError(e);
    return { kind: 'response', status: r.status, headers: r.headers, body: r.body };
  }
  if (e instanceof RouterFailure) {
    if (e.is(FailureFlag.Interrupted)) return { kind: 'reset', code: H2Code.CANCEL };
    if (e.is(FailureFlag.Rejected)) return { kind: 'reset', code: H2Code.REFUSED_STREAM };
  }
  if (e instanceof ProxyError && e.retryable) return { kind: 'reset', code: H2Code.REFUSED_STREAM };
  return { kind: 'reset', code: H2Code.INTERNAL_ERROR };
}

/** The gRPC status of a proxy failure. */
function grpcStatusFor(e: unknown): number {
  if (e instanceof StreamResetError) return e.h2Code === H2Code.CANCEL ? GrpcStatus.CANCELLED : GrpcStatus.UNAVAILABLE;
  if (e instanceof RouterFailure) {
    if (e.is(FailureFlag.Timeout)) return GrpcStatus.DEADLINE_EXCEEDED;
    if (e.is(FailureFlag.Rejected)) return GrpcStatus.RESOURCE_EXHAUSTED;
    if (e.is(FailureFlag.Interrupted)) return GrpcStatus.CANCELLED;
    return GrpcStatus.UNAVAILABLE;
  }
  if (e instanceof BindingFailedError || e instanceof UnknownDestinationError) return GrpcStatus.UNAVAILABLE;
  if (e instanceof ProxyError) {
    if (e.retryable) return GrpcStatus.RESOURCE_EXHAUSTED;
    if (e instanceof InvalidDtabHeaderError) return GrpcStatus.INVALID_ARGUMENT;
    return GrpcStatus.UNAVAILABLE;
  }
  return GrpcStatus.UNAVAILABLE;
}

/**
 * Sends `answer` on `stream` (when the stream can still take it). `clearContext` drops `prx-*`
 * headers and error bodies. Returns the status sent (0 for a reset).
 */
export function sendAnswer(stream: H2ServerStream, answer: H2Answer, clearContext: boolean, maxErrBytes: number): number {
  if (stream.destroyed || stream.closed) return 0;
  if (answer.kind === 'reset' || stream.headersSent) {
    stream.close(answer.kind === 'reset' ? answer.code : H2Code.INTERNAL_ERROR);
    return 0;
  }
  if (answer.kind === 'grpc') {
    const headers: OutgoingHttpHeaders = grpcErrorHeaders(answer.status, answer.message);
    if (!clearContext) headers['prx-err'] = errorHeaderValue(answer.message, maxErrBytes);
    stream.respond(headers, { endStream: true });
    return 200;
  }
  const headers: OutgoingHttpHeaders = { ':status': answer.status };
  if (clearContext) {
    headers['content-length'] = '0';
    stream.respond(headers, { endStream: true });
    return answer.status;
  }
  for (const [k, v] of Object.entries(answer.headers)) headers[k] = v;
  stream.respond(headers);
  stream.end(answer.body);
  return answer.status;
}
